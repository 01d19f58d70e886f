// Package wildchat reads WildChat conversation logs (the allenai/WildChat-1M
// and older allenai/WildChat releases) exported as JSON Lines, one
// conversation per line, plain or compressed. Decode maps one record and is
// also used by the Parquet reader, whose rows have the same nested shape.
//
// The per-message fields WildChat carries (turn_identifier, per-message
// language, moderation) are not kept on the messages; the top-level fields
// other than conversation are kept verbatim in Conversation.Meta.
package wildchat
