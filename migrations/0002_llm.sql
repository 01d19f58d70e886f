-- Answers of model calls keyed by a hash of the canonical request, so a
-- repeated or resumed call is never paid for twice.
CREATE TABLE llm_cache (
    key      TEXT PRIMARY KEY,
    response BLOB NOT NULL,
    created  TEXT NOT NULL
) WITHOUT ROWID;

-- One row per model call (cache hits included, flagged), for usage and cost.
CREATE TABLE llm_calls (
    id                INTEGER PRIMARY KEY,
    role              TEXT NOT NULL,
    stage             TEXT NOT NULL,
    endpoint          TEXT NOT NULL,
    model             TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens     INTEGER NOT NULL,
    reasoning_tokens  INTEGER NOT NULL,
    cost_usd          REAL NOT NULL,
    latency_ms        INTEGER NOT NULL,
    attempts          INTEGER NOT NULL,
    status            TEXT NOT NULL,
    error             TEXT NOT NULL,
    from_cache        INTEGER NOT NULL,
    at                TEXT NOT NULL
);
CREATE INDEX llm_calls_role ON llm_calls(role, model, stage);
