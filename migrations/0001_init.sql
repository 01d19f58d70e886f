-- The run's settings: one row per key (ingest filters, curate settings, ...).
CREATE TABLE run_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One row per input file, with how far ingest got through it. records_done
-- counts raw records (kept, dropped and quarantined alike) whose effects are
-- committed, so a resumed ingest skips exactly that many.
CREATE TABLE inputs (
    id           INTEGER PRIMARY KEY,
    path         TEXT NOT NULL UNIQUE,
    format       TEXT NOT NULL,
    size         INTEGER NOT NULL,
    mtime_ns     INTEGER NOT NULL,
    records_done INTEGER NOT NULL DEFAULT 0,
    finished     INTEGER NOT NULL DEFAULT 0
);

-- Kept conversations. seq is the ingest order and the order of every export.
-- data is the canonical JSON of the conversation, zstd-compressed.
CREATE TABLE conversations (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    content_hash TEXT NOT NULL,
    input_id     INTEGER NOT NULL REFERENCES inputs(id),
    source_line  INTEGER NOT NULL,
    source_row   INTEGER NOT NULL,
    format       TEXT NOT NULL,
    user_turns   INTEGER NOT NULL,
    language     TEXT NOT NULL,
    data         BLOB NOT NULL
);

-- Content hashes seen, only filled when ingest drops exact duplicates.
CREATE TABLE content_hashes (
    hash TEXT PRIMARY KEY
) WITHOUT ROWID;

-- Conversations dropped by a filter, counted per input and reason.
CREATE TABLE drops (
    input_id INTEGER NOT NULL REFERENCES inputs(id),
    reason   TEXT NOT NULL,
    count    INTEGER NOT NULL,
    PRIMARY KEY (input_id, reason)
) WITHOUT ROWID;

-- Records that could not be read, with where they were and why.
CREATE TABLE quarantine (
    id       INTEGER PRIMARY KEY,
    input_id INTEGER NOT NULL REFERENCES inputs(id),
    file     TEXT NOT NULL,
    line     INTEGER NOT NULL,
    row      INTEGER NOT NULL,
    reason   TEXT NOT NULL,
    detail   TEXT NOT NULL,
    excerpt  TEXT NOT NULL
);
CREATE INDEX quarantine_reason ON quarantine(reason);

-- A task is one stage variant over one conversation; it is done when all the
-- units it produced are committed with it in one transaction.
CREATE TABLE tasks (
    stage    TEXT NOT NULL,
    variant  TEXT NOT NULL,
    version  TEXT NOT NULL,
    conv_seq INTEGER NOT NULL REFERENCES conversations(seq),
    status   TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    attempts INTEGER NOT NULL,
    error    TEXT NOT NULL DEFAULT '',
    updated  TEXT NOT NULL,
    PRIMARY KEY (stage, variant, version, conv_seq)
) WITHOUT ROWID;

-- Units of work: one per (stage, conversation, turn, variant, version). key is
-- a hash of those five, so it is the same in every run that would compute the
-- same thing.
CREATE TABLE units (
    key             TEXT PRIMARY KEY,
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
    tokens          INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX units_by_stage ON units(stage, variant, version, conv_seq, turn);
