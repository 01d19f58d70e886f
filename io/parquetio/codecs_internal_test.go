package parquetio

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// A page whose codec header claims more bytes than the page's uncompressed
// size is refused before the codec allocates what it claims: a fuzzer's
// flipped snappy length made each such page allocate up to 4 GiB and take
// over a second before its error. A page that is what it says still reads.
func TestDecodeRefusesOversizedClaims(t *testing.T) {
	text := bytes.Repeat([]byte("a page of chat text; "), 200)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	huge := binary.AppendUvarint(nil, 1<<32-1)
	zhuge := append([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}, binary.LittleEndian.AppendUint64(nil, 1<<29)...) // magic; single segment, 8-byte content size
	for _, tt := range []struct {
		name  string
		codec compress.Compression
		page  []byte // valid compressed text
		bad   []byte // claims far more than the page holds
	}{
		{"snappy", compress.Codecs.Snappy, nil, append(huge, "garbage"...)},
		// zstd allocates up to 32 KiB per compressed byte of what a frame
		// claims, up to its 512 MiB window: 64 KiB of page claiming 512 MiB get them.
		{"zstd", compress.Codecs.Zstd, enc.EncodeAll(text, nil), append(zhuge, make([]byte, 64<<10)...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := compress.GetCodec(tt.codec)
			if err != nil {
				t.Fatal(err)
			}
			page := tt.page
			if page == nil {
				page = c.Encode(nil, text)
			}
			if got := c.Decode(make([]byte, len(text)), page); !bytes.Equal(got, text) {
				t.Fatalf("a sound page decodes to %d bytes, want %d", len(got), len(text))
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if got := c.Decode(make([]byte, len(text)), tt.bad); got != nil {
				t.Errorf("a page claiming more than its size decoded to %d bytes", len(got))
			}
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("refusing it allocated %d bytes", n)
			}
		})
	}
}
