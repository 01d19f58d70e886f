-- Near-duplicate detection at ingest (--dedupe near).
--
-- The LSH index lives in the run file, not in memory, so a run of millions
-- of conversations holds no more in RAM than a run of thousands, and the
-- index survives a kill with the batch that filled it. Only kept
-- conversations are indexed; ingest writes these tables in the same
-- transaction as the batch that keeps or drops each conversation.

-- One row per band of each kept conversation's MinHash signature: key is
-- the band's rows hashed together with the band's number. Conversations
-- that share a key are candidates, compared by their signatures. The
-- primary key clusters the rows by key, so a look-up is one index seek;
-- conv_seq in the key lets it read the newest members of a band first.
CREATE TABLE near_bands (
    band_key INTEGER NOT NULL,
    conv_seq INTEGER NOT NULL REFERENCES conversations(seq),
    PRIMARY KEY (band_key, conv_seq)
) WITHOUT ROWID;

-- Each kept conversation's signature (the minimums, 4 bytes each), which
-- estimates the Jaccard similarity of two conversations' user turns.
-- Keyed by seq, so rows are appended in ingest order.
CREATE TABLE near_signatures (
    conv_seq INTEGER PRIMARY KEY REFERENCES conversations(seq),
    sig      BLOB NOT NULL
);

-- Each conversation dropped as a near duplicate: where it was read, its id,
-- the kept conversation it matched and their estimated similarity. The
-- dropped conversation itself is not stored, like any dropped one.
CREATE TABLE near_duplicates (
    id          INTEGER PRIMARY KEY,
    input_id    INTEGER NOT NULL REFERENCES inputs(id),
    source_line INTEGER NOT NULL,
    source_row  INTEGER NOT NULL,
    dropped_id  TEXT NOT NULL,
    kept_seq    INTEGER NOT NULL REFERENCES conversations(seq),
    similarity  REAL NOT NULL
);
