// Package decompress opens input files and streams whatever compression they
// carry (zstd or gzip, chosen by magic bytes, not by name) as plain bytes. It
// knows nothing about what the bytes mean; format sniffing lives in detect.
package decompress
