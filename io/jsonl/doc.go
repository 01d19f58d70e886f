// Package jsonl holds what every text-format reader and writer shares: the
// LineReader and ArrayReader that cut a stream into raw records with line
// numbers and a size cap, the RecordReader that pairs them with a format's
// DecodeFunc, the Cursor (a small checking pull parser the format decoders
// use instead of reflection), helpers for quarantining records, the walk of
// a record's messages array (Messages, ObjectArray), and the canonical JSONL
// Writer.
//
// The mapping of each format's fields onto conv.Conversation does not live
// here; it lives in wildchat, openaichat, sharegpt and lic, which name their
// fields and map their speakers onto roles.
package jsonl
