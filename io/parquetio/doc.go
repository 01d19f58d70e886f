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
//     time, and TableWriter, the same for rows of other schemas (curated
//     contexts, the quarantine table); both are in writer.go;
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
// groups are capped by rows and by bytes), and readers decode one batch of
// rows at a time, never a whole table, and only the columns the format's
// decoder uses.
//
// The Arrow–Parquet mapping is our own, on top of Arrow's low-level Parquet
// packages (parquet/file, parquet/schema): shred.go turns Arrow arrays into
// definition and repetition levels for the column writers, assemble.go
// turns the record readers' levels back into arrays. Arrow's pqarrow, which
// did both, imports Arrow's compute kernels and Flight with gRPC and
// protobuf, about 23 MB of the ac3 binary for the two functions we called;
// the files we write are byte for byte those it wrote (pqcompat_test.go
// checks that, and that we read what it reads).
//
// Corrupt input is an error, never a crash or a hang: all decoding runs on
// the caller's goroutine under CatchPanic, with an allocator that refuses
// sizes no file of that length can need (allocator.go), and each row
// group's page headers are walked before any page is read (pagewalk.go).
// Nor is it a shorter file: every row group must decode to the rows its
// metadata counts, and every column to the values its chunk's metadata
// counts (reader.go), because Arrow's record reader takes a page it cannot
// decode for the end of its column.
package parquetio
