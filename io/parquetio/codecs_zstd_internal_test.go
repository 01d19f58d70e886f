package parquetio

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/parquet/compress"
)

// The registered zstd codec is ours (reusedZstd), and it writes what
// Arrow's own writes, at every level, for pages of every size, reusing its
// encoders, also when pages of several columns are compressed at once.
func TestZstdCodecMatchesArrows(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	ours, ok := c.(*reusedZstd)
	if !ok {
		t.Fatalf("the zstd codec is %T, want *reusedZstd", c)
	}
	arrows := ours.safeDecode.Codec
	var pages [][]byte
	for _, n := range []int{0, 1, 100, 64 << 10, 1 << 20, 3 << 20} {
		var b bytes.Buffer
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "message %d says %d; ", i%97, i*i%1013)
		}
		pages = append(pages, b.Bytes()[:n])
	}
	for _, level := range []int{1, 3, 7, 12, compress.DefaultCompressionLevel} {
		for round := range 2 { // the second round reuses the encoders
			for _, p := range pages {
				got := ours.EncodeLevel(nil, p, level)
				want := arrows.EncodeLevel(nil, p, level)
				if !bytes.Equal(got, want) {
					t.Fatalf("level %d, %d-byte page, round %d: %d bytes, Arrow's codec wrote %d", level, len(p), round, len(got), len(want))
				}
				// As Arrow's page reader does, dst is sized to the page.
				if back := ours.Decode(make([]byte, len(p)), got); !bytes.Equal(back, p) {
					t.Fatalf("level %d, %d-byte page: does not decode to itself", level, len(p))
				}
			}
		}
	}
	if len(ours.encs) == 0 || len(ours.encs) > 4 {
		t.Errorf("%d encoders kept, want one per zstd speed used", len(ours.encs))
	}
	// Side by side, as a row group's columns are written.
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			p := pages[len(pages)-1-k%2]
			if got, want := ours.EncodeLevel(nil, p, 1), arrows.EncodeLevel(nil, p, 1); !bytes.Equal(got, want) {
				t.Errorf("compressing side by side: %d bytes, Arrow's codec wrote %d", len(got), len(want))
			}
		})
	}
	wg.Wait()
}
