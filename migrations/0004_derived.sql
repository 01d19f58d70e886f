-- Conversations the run makes itself (simulated trajectories, stitched
-- instances) are stored beside the ingested ones. origin says where a
-- conversation came from: 'source' for ingest, the deriving step's name
-- otherwise. parent_seq is the conversation it was made from, when there is
-- one. Adding a column with a default does not rewrite the table, so an
-- existing run migrates in the time it takes to build the index.
ALTER TABLE conversations ADD COLUMN origin TEXT NOT NULL DEFAULT 'source';
ALTER TABLE conversations ADD COLUMN parent_seq INTEGER REFERENCES conversations(seq);

-- Every query that selects conversations by origin reads this index only:
-- origin sits after the stored data in a row, so reading it from the table
-- would walk each conversation's overflow pages.
CREATE INDEX conversations_by_origin ON conversations(origin, seq);
