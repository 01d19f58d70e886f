package parquetio_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
)

// BenchmarkParquetRead measures OpenReader plus Next over a whole file, in
// MB/s of message text decoded: a synthetic canonical file of 20,000
// conversations (several row groups) in zstd and snappy, and WildChat's
// shape (nested moderation structs, snappy) built from the shared sample
// repeated, skipped when the shared data is absent.
func BenchmarkParquetRead(b *testing.B) {
	for _, tc := range []struct {
		name  string
		build func(testing.TB) []byte
	}{
		{"canonical/zstd", func(tb testing.TB) []byte {
			return writeConversations(tb, syntheticConversations(20_000), parquetio.WriterOptions{Compression: parquetio.Zstd})
		}},
		{"canonical/snappy", func(tb testing.TB) []byte {
			return writeConversations(tb, syntheticConversations(20_000), parquetio.WriterOptions{Compression: parquetio.Snappy})
		}},
		{"wildchat/snappy", func(tb testing.TB) []byte {
			lines := readWildChatLines(tb, 10)
			var many [][]byte
			for range 300 {
				many = append(many, lines...)
			}
			return buildWildChatParquet(tb, many)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.parquet")
			if err := os.WriteFile(path, tc.build(b), 0o644); err != nil {
				b.Fatal(err)
			}
			// One untimed pass gives the text size the throughput is in.
			text, _ := readText(b, path)
			b.SetBytes(text)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				readText(b, path)
			}
			// CPU time as well as wall time: on a shared machine the wall
			// clock mostly measures the neighbours.
			if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
				b.ReportMetric(float64(text)*float64(b.N)/cpu/1e6, "MB/cpu-s")
			}
		})
	}
}

func syntheticConversations(n int) []*conv.Conversation {
	out := make([]*conv.Conversation, n)
	for i := range out {
		out[i] = syntheticConversation(i)
		out[i].Messages[1].Content = fmt.Sprintf("%d %s", i*7919, out[i].Messages[1].Content)
	}
	return out
}

// readText reads every row of path and returns the message bytes and rows.
func readText(tb testing.TB, path string) (text, rows int64) {
	r, _, err := parquetio.OpenReader(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	for {
		rec, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return text, rows
		}
		if err != nil {
			tb.Fatal(err)
		}
		rows++
		if rec.Conv != nil {
			text += messageBytes(rec.Conv)
		}
	}
}
