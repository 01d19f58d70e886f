// Package sharegpt reads ShareGPT-style conversation files:
// {"id", "conversations":[{"from","value"}]}, either one record a line or
// all records in one JSON array (streamed, never loaded whole). Records of an
// array are located by the line their opening brace is on.
package sharegpt
