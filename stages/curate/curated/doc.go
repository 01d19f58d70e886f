// Package curated is what a curated context is, apart from the strategies
// that build one: its parts (references to a conversation's messages,
// literal texts, filler), the record of what a model-backed strategy
// decided (Info), how it turns back into chat messages (Materialize) and
// the compact form it is stored in (EncodeContext, DecodeContext).
//
// Everything that reads the curate stage's output (respond, the report,
// the exports, inspect) needs only this package; the strategies themselves
// are in package curate.
package curated
