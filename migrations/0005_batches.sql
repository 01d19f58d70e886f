-- Requests of roles in batch mode, queued until a batch answers them. key is
-- the request's cache key (the batch line's custom_id); body is the
-- chat-completions request, cleared once the answer is imported.
-- state: queued (waiting for a batch), submitted (in batch batch_id),
-- done (answer imported into llm_cache), online (a leftover the fallback
-- sends online), failed (a leftover that fails its unit: status and error).
CREATE TABLE batch_requests (
    key      TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    role     TEXT NOT NULL,
    stage    TEXT NOT NULL,
    body     BLOB NOT NULL,
    est_usd  REAL NOT NULL,
    state    TEXT NOT NULL CHECK (state IN ('queued', 'submitted', 'done', 'online', 'failed')),
    batch_id INTEGER REFERENCES batches(id),
    submits  INTEGER NOT NULL DEFAULT 0,
    status   INTEGER NOT NULL DEFAULT 0,
    error    TEXT NOT NULL DEFAULT '',
    queued   TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX batch_requests_state ON batch_requests(state, endpoint, key);
CREATE INDEX batch_requests_batch ON batch_requests(batch_id, state);

-- Batches, recorded before each step that acts on them: a row is written
-- (state prepared) before its file is uploaded, the file id (uploaded)
-- before the batch is created, the batch id (submitted) as soon as it is
-- known; ended once the endpoint says it is over, imported once every line
-- of its output and error files is settled.
CREATE TABLE batches (
    id            INTEGER PRIMARY KEY,
    endpoint      TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('prepared', 'uploaded', 'submitted', 'ended', 'imported')),
    remote_status TEXT NOT NULL DEFAULT '',
    input_file    TEXT NOT NULL DEFAULT '',
    remote_id     TEXT NOT NULL DEFAULT '',
    output_file   TEXT NOT NULL DEFAULT '',
    error_file    TEXT NOT NULL DEFAULT '',
    requests      INTEGER NOT NULL,
    completed     INTEGER NOT NULL DEFAULT 0,
    failed        INTEGER NOT NULL DEFAULT 0,
    imported      INTEGER NOT NULL DEFAULT 0,
    fallback      TEXT NOT NULL DEFAULT '',
    errors        TEXT NOT NULL DEFAULT '',
    created       TEXT NOT NULL,
    updated       TEXT NOT NULL
);
CREATE INDEX batches_state ON batches(state);
