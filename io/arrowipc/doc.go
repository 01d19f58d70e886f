// Package arrowipc reads and writes conversations as Apache Arrow IPC data,
// using the canonical schema that package parquetio defines.
//
// Writers produce the IPC file format ("Feather v2", starting with the
// ARROW1 magic), in batches of a few thousand rows, so memory stays bounded
// and readers can seek to a batch. OpenReader accepts both the file format
// and the stream format, telling them apart by the magic, and decodes rows
// with parquetio's decoders, so an IPC file with WildChat's columns reads as
// well as one of ours.
//
// A damaged file is an error, not a shorter one (check.go): a file's footer
// must list exactly the batches its body holds, a stream must end with its
// end-of-stream marker and nothing after it, and every column of a batch
// must have the batch's row count.
//
// What does not live here: the schema itself and the row decoding
// (parquetio), Parquet, JSONL, and choosing a reader for a file (detect).
package arrowipc
