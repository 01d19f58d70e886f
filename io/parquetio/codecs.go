package parquetio

import (
	"encoding/binary"
	"sync"

	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// This file adjusts Arrow's Parquet codecs in two ways.
//
// First, Arrow Go 17's zstd codec builds a new zstd encoder for every page it
// compresses (Codec.EncodeLevel, which the page writer always calls). An
// encoder allocates its match tables and window up front, several MB, so
// with 1 MB pages the writer spent most of its time in allocation and GC:
// about 116 MB/s of chat text against about 400 MB/s for snappy.
//
// reusedZstd replaces Arrow's registered codec with one that keeps a single
// encoder per level. zstd.Encoder.EncodeAll is safe for concurrent use and
// keeps no state between calls, so the compressed bytes are exactly those a
// fresh encoder with the same options would produce (files stay
// deterministic and readable by anyone), only made faster. Decoding and the
// streaming reader and writer are Arrow's own.
//
// Second, every codec's Decode panics when the data does not decompress.
// Our reader decodes on the caller's goroutine, where CatchPanic would
// catch that, but a panic is a poor way to report a corrupt page and other
// code may decode on goroutines of its own. safeDecode wraps each
// registered codec so a failed Decode returns nil instead; the page reader
// then sees fewer bytes than the page header promised and returns an
// error. So does a page whose codec header claims more than the page's
// size, before the codec allocates what it claims.
//
// Both replacements are installed once, in init, because Arrow's codec
// registry is a plain map read without a lock: changing it later could race
// with a reader or writer in another goroutine. They affect every Parquet
// read and write in the process, which is the point.
type reusedZstd struct {
	safeDecode // Arrow's zstd codec, for everything but encoding

	mu   sync.Mutex
	encs map[zstd.EncoderLevel]*zstd.Encoder
}

func init() {
	for _, c := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Gzip,
		compress.Codecs.Brotli, compress.Codecs.Lz4, compress.Codecs.Zstd} {
		base, err := compress.GetCodec(c)
		if err != nil {
			continue // not built into this Arrow: nothing to wrap
		}
		var codec compress.Codec = safeDecode{base, c}
		if c == compress.Codecs.Zstd {
			codec = &reusedZstd{safeDecode: safeDecode{base, c}, encs: map[zstd.EncoderLevel]*zstd.Encoder{}}
		}
		compress.RegisterCodec(c, codec)
	}
}

// safeDecode is a codec whose Decode returns nil instead of panicking, or
// when the data claims to be larger than dst, which Arrow's page reader
// (its only caller) sizes to the page.
type safeDecode struct {
	compress.Codec
	kind compress.Compression
}

func (s safeDecode) Decode(dst, src []byte) (out []byte) {
	// Arrow's page reader sizes dst to the page's uncompressed size. Snappy
	// and zstd allocate what their own header claims before finding out
	// that the data does not hold it (snappy up to 4 GiB a page, zstd up to
	// its 512 MiB window), bypassing the reader's allocator: a corrupt page
	// would cost seconds and gigabytes before its error.
	if n, ok := claimedSize(s.kind, src); ok && n > uint64(len(dst)) {
		return nil
	}
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	return s.Codec.Decode(dst, src)
}

// claimedSize is the decompressed size compressed data of a codec says it
// has in its header, for the codecs that allocate by it.
func claimedSize(kind compress.Compression, src []byte) (uint64, bool) {
	switch kind {
	case compress.Codecs.Snappy:
		// A snappy block starts with its decoded length as a uvarint.
		n, k := binary.Uvarint(src)
		return n, k > 0
	case compress.Codecs.Zstd:
		var h zstd.Header
		if h.Decode(src) != nil || !h.HasFCS {
			return 0, false
		}
		return h.FrameContentSize, true
	}
	return 0, false
}

// level maps a Parquet compression level as Arrow does.
func zstdLevel(level int) zstd.EncoderLevel {
	if level == compress.DefaultCompressionLevel {
		return zstd.SpeedDefault
	}
	return zstd.EncoderLevelFromZstd(level)
}

func (z *reusedZstd) encoder(level int) *zstd.Encoder {
	l := zstdLevel(level)
	z.mu.Lock()
	defer z.mu.Unlock()
	enc, ok := z.encs[l]
	if !ok {
		// The same options as Arrow's codec, so the output is the same.
		enc, _ = zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l))
		z.encs[l] = enc
	}
	return enc
}

func (z *reusedZstd) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (z *reusedZstd) EncodeLevel(dst, src []byte, level int) []byte {
	return z.encoder(level).EncodeAll(src, dst[:0])
}
