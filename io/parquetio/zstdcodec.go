package parquetio

import (
	"sync"

	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// Arrow's zstd codec makes a new encoder for every page it compresses at an
// explicit level, and a klauspost encoder allocates its history (16 MB at
// the default window) on first use: exporting the annotations of a million
// conversations allocated that for each of ~9,000 pages, and the collector's
// goal swung with however many were alive at a cycle (peak RSS 120 MB
// against 88 MB for ten thousand). This codec is Arrow's with one encoder
// per level, kept for the life of the process; the options are Arrow's, so
// the bytes written are the same.
func init() {
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		return // Arrow without zstd: nothing to replace
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &zstdCodec{Codec: base})
}

// zstdCodec is Arrow's zstd codec with its per-level encoders reused.
type zstdCodec struct {
	compress.Codec
	mu   sync.Mutex
	encs map[zstd.EncoderLevel]*zstd.Encoder
}

func (z *zstdCodec) encoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if e, ok := z.encs[level]; ok {
		return e, nil
	}
	// One encoder state: pages are compressed one at a time per column
	// writer, and each state would hold its own history.
	e, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	if z.encs == nil {
		z.encs = map[zstd.EncoderLevel]*zstd.Encoder{}
	}
	z.encs[level] = e
	return e, nil
}

// EncodeLevel compresses src at a zstd level as Arrow's codec does.
func (z *zstdCodec) EncodeLevel(dst, src []byte, level int) []byte {
	lv := zstd.EncoderLevelFromZstd(level)
	if level == compress.DefaultCompressionLevel {
		lv = zstd.SpeedDefault
	}
	e, err := z.encoder(lv)
	if err != nil {
		return z.Codec.EncodeLevel(dst, src, level)
	}
	return e.EncodeAll(src, dst[:0])
}
