-- Where each conversation's language came from: 'input' (the record's own
-- field, e.g. WildChat's) or 'identified' (ac3 identified it from the user
-- turns; the detector and its confidence are in the conversation's data).
-- Rows stored before this column existed get '': their language, when they
-- have one, came from the input, as ac3 identified none then. Status counts
-- conversations by language and source from the index alone, without
-- reading any conversation.
ALTER TABLE conversations ADD COLUMN language_source TEXT NOT NULL DEFAULT '';
CREATE INDEX conversations_language ON conversations(language, language_source);
