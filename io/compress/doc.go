// Package compress is the one place that knows about compressed files. On
// the way in it opens a file and streams whatever compression it carries
// (zstd or gzip, chosen by magic bytes, not by name) as plain bytes; on the
// way out it picks the compression from the output's name. The table of
// compression extensions (.zst, .zstd, .gz, .gzip) lives here and nowhere
// else. It knows nothing about what the bytes mean: format sniffing lives in
// detect, file formats in jsonl, parquetio and arrowipc.
package compress
