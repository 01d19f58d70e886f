package wildchat_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/ac3/ac3/io/wildchat"
	"github.com/ac3/ac3/pipeline/conv"
)

const sample = "../../fixtures/wildchat/wildchat-1m-sample10.jsonl"

func sampleLinesQuiet() [][]byte {
	data, err := os.ReadFile(sample)
	if err != nil {
		return nil
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

func sampleLines(tb testing.TB) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(sample)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

// BenchmarkWildchatDecode measures Decode alone on real WildChat lines; the
// MB/s figure is raw JSON bytes per second on one goroutine.
func BenchmarkWildchatDecode(b *testing.B) {
	lines := sampleLines(b)
	var n int64
	for _, l := range lines {
		n += int64(len(l)) + 1
	}
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		for i, l := range lines {
			r := wildchat.Decode(l, conv.Source{File: "bench", Line: int64(i + 1)})
			if r.Conv == nil {
				b.Fatalf("line %d: %+v", i+1, r.Bad)
			}
		}
	}
}

// BenchmarkWildchatDecodeParallel runs Decode on all cores, as the ingest
// engine does.
func BenchmarkWildchatDecodeParallel(b *testing.B) {
	lines := sampleLines(b)
	var n int64
	for _, l := range lines {
		n += int64(len(l)) + 1
	}
	b.SetBytes(n)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for i, l := range lines {
				if r := wildchat.Decode(l, conv.Source{File: "bench", Line: int64(i + 1)}); r.Conv == nil {
					b.Errorf("line %d: %+v", i+1, r.Bad)
				}
			}
		}
	})
}
