-- Why a unit failed, reduced to a reason that many failures share (numbers
-- and quoted text taken out); the ledger fills it when it stores a failed
-- unit, so failures can be counted by reason without reading every error.
ALTER TABLE units ADD COLUMN reason TEXT NOT NULL DEFAULT '';

-- Counting a stage variant's units by status reads only this index, never
-- the units' outputs.
CREATE INDEX units_by_status ON units(stage, variant, version, status);

-- Failed units by reason. Partial, so it is as small as the failures are
-- few, and grouping them reads only the index.
CREATE INDEX units_failed ON units(stage, variant, version, reason, conv_seq, turn) WHERE status = 'failed';
