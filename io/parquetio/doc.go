// Package parquetio reads and writes conversations as Apache Parquet, and
// owns the canonical Arrow schema that ac3 uses for every columnar format.
//
// What lives here:
//
//   - Schema, the canonical conversation/v1 Arrow schema, in which messages
//     are a real list<struct<role, content>> (not JSON text), so pandas,
//     pyarrow and DuckDB see nested data;
//   - ConversationBuilder, which turns conversations into Arrow record
//     batches of that schema (arrowipc reuses it);
//   - Writer, which streams conversations to a Parquet file a row group at a
//     time, and TableWriter, the same for any flat schema (curated contexts,
//     the quarantine table);
//   - OpenReader, which streams a Parquet file back as records, whether it
//     holds our canonical schema or WildChat as released on Hugging Face, and
//     NewBatchReader, the same decoding over any source of Arrow batches.
//
// What does not: Arrow IPC files (package arrowipc), JSONL (package jsonl),
// choosing a reader for a file (package detect).
//
// Importing the package replaces Arrow's registered Parquet codecs with
// wrappers (codecs.go): zstd reuses its encoder, which made writes about
// four times faster, and no codec's Decode panics on corrupt data.
//
// Memory stays bounded on both sides: writers hold one row group being
// filled and at most one being encoded and written in the background (row
// groups are capped by rows and by bytes), and readers pull one batch of rows
// at a time through pqarrow's record reader, never a whole table.
//
// Corrupt input is an error, never a crash or a hang: OpenReader walks each
// column chunk's page headers and decodes the nested columns one batch ahead
// of pqarrow on the caller's goroutine (pagewalk.go, validate.go), because
// pqarrow decodes them on goroutines of its own where a panic would end the
// process.
package parquetio
