-- A shard of a sharded run says which shard it is, so it is never continued
-- as another shard, and so a merge can check its shards belong together.
-- One row at most. shard_index is -1 in a run merged from shard_count
-- shards. scheme names the hash that assigns conversations to shards.
CREATE TABLE shard (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    shard_index INTEGER NOT NULL,
    shard_count INTEGER NOT NULL CHECK (shard_count >= 1),
    scheme      TEXT NOT NULL,
    created     TEXT NOT NULL
);

-- The fingerprint of each step's settings (its plan section, the seed, the
-- models its roles use) as the shard last ran it. Shards merge only when
-- every step they ran has the same fingerprint in all of them.
CREATE TABLE shard_steps (
    step        TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL
) WITHOUT ROWID;
