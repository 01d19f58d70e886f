-- Stages and exports read one conversation's units at a time (respond reads
-- the curated contexts of the conversation it answers, the preference
-- export the answers and verdicts of each row). Without this index each such
-- read scanned every unit of the stage, so those steps grew with the square
-- of the run.
CREATE INDEX units_by_conversation ON units(stage, conversation_id, turn, variant);
