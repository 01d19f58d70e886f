//go:build unix

package bench_test

import (
	"testing"
	"github.com/klauspost/compress/zstd"
	"bytes"
	"time"
)

func TestGenProbe(t *testing.T) {
	g := newGen(genSeed)
	var raw bytes.Buffer
	var line []byte
	t0 := time.Now()
	for i := range 20000 {
		line = g.conversation(line[:0], i)
		raw.Write(line); raw.WriteByte('\n')
	}
	gt := time.Since(t0)
	t0 = time.Now()
	var z bytes.Buffer
	zw, _ := zstd.NewWriter(&z, zstd.WithEncoderLevel(zstd.SpeedDefault))
	zw.Write(raw.Bytes()); zw.Close()
	t.Logf("20k convs: %d MB raw (%.0f B/conv), gen %v, zst %d MB ratio %.2f in %v", raw.Len()>>20, float64(raw.Len())/20000, gt, z.Len()>>20, float64(raw.Len())/float64(z.Len()), time.Since(t0))
	t.Logf("%s", raw.Bytes()[:3000])
}
