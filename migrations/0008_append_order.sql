-- Units and cached answers in insertion order.
--
-- Both tables were clustered on a random hash (WITHOUT ROWID with the hash
-- as primary key), so every insert landed on a random leaf of a tree that
-- grows with the run: past a few thousand conversations each commit
-- rewrote about one page per row, and a model stage slowed as the run grew
-- (issue 9: 0.6x the calls/s at 100k conversations that it reached at 1k).
-- Rows now go in rowid order, so a commit appends to the right edge. A
-- unit's identity is kept by a unique index on what its key is a hash of
-- (stage, variant, version, conversation, turn); units_by_stage becomes that
-- index. A cached answer is still found by its key, through a unique index
-- that holds only the key.

CREATE TABLE units_v2 (
    id              INTEGER PRIMARY KEY,
    key             TEXT NOT NULL,
    stage           TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    conv_seq        INTEGER NOT NULL,
    turn            INTEGER NOT NULL,
    variant         TEXT NOT NULL,
    version         TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    attempts        INTEGER NOT NULL,
    error           TEXT NOT NULL DEFAULT '',
    raw             TEXT NOT NULL DEFAULT '',
    output          BLOB,
    tokens          INTEGER NOT NULL DEFAULT 0,
    reason          TEXT NOT NULL DEFAULT ''
);
INSERT INTO units_v2 (key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason)
    SELECT key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens, reason
    FROM units ORDER BY stage, variant, version, conv_seq, turn;
DROP TABLE units;
ALTER TABLE units_v2 RENAME TO units;
CREATE UNIQUE INDEX units_by_stage ON units(stage, variant, version, conv_seq, turn);
CREATE INDEX units_by_status ON units(stage, variant, version, status);
CREATE INDEX units_failed ON units(stage, variant, version, reason, conv_seq, turn) WHERE status = 'failed';
CREATE INDEX units_by_conversation ON units(stage, conversation_id, turn, variant);

CREATE TABLE llm_cache_v2 (
    id       INTEGER PRIMARY KEY,
    key      TEXT NOT NULL UNIQUE,
    response BLOB NOT NULL,
    created  TEXT NOT NULL
);
INSERT INTO llm_cache_v2 (key, response, created) SELECT key, response, created FROM llm_cache ORDER BY created, key;
DROP TABLE llm_cache;
ALTER TABLE llm_cache_v2 RENAME TO llm_cache;
