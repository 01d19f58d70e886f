package detect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ac3/ac3/io/compress"
	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/conv"
)

// benchFile writes a WildChat-shaped .jsonl.zst of about 32 MB whose text is
// random words, so it compresses like real logs rather than like repeats.
func benchFile(b *testing.B) (string, int64) {
	b.Helper()
	words := strings.Fields("the of and to in is you that it for on with as are this be or by from at an have not can but code function return value error data file use if we will which your model user time list string python example more number output input")
	r := rand.New(rand.NewPCG(7, 9))
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[r.IntN(len(words))])
			if r.IntN(12) == 0 {
				sb.WriteString(".\n")
			} else {
				sb.WriteByte(' ')
			}
		}
		return sb.String()
	}
	var raw bytes.Buffer
	for i := 0; raw.Len() < 32<<20; i++ {
		var msgs []map[string]any
		for t := range 3 + r.IntN(5) {
			msgs = append(msgs, map[string]any{"content": text(200 + r.IntN(1500)), "role": "user", "language": "English", "turn_identifier": i*10 + t, "toxic": false})
			msgs = append(msgs, map[string]any{"content": text(500 + r.IntN(4000)), "role": "assistant", "language": "English", "turn_identifier": i*10 + t, "toxic": false})
		}
		line, _ := json.Marshal(map[string]any{
			"conversation_hash": fmt.Sprintf("%032x", r.Uint64()), "model": "gpt-4", "timestamp": "2023-04-09 00:23:46+00:00",
			"conversation": msgs, "turn": len(msgs) / 2, "language": "English", "toxic": false, "redacted": false,
			"openai_moderation": []map[string]any{{"categories": map[string]bool{"harassment": false}, "flagged": false}},
		})
		raw.Write(line)
		raw.WriteByte('\n')
	}
	path := filepath.Join(b.TempDir(), "bench.jsonl.zst")
	f, _ := os.Create(path)
	w, _ := zstd.NewWriter(f)
	w.Write(raw.Bytes())
	w.Close()
	f.Close()
	return path, int64(raw.Len())
}

// BenchmarkBaseline is zstd decompression plus line splitting alone: the
// yardstick ingest speed is compared with.
func BenchmarkBaseline(b *testing.B) {
	path, size := benchFile(b)
	b.SetBytes(size)
	for b.Loop() {
		rc, err := compress.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		lr := jsonl.NewLineReader(rc, 0)
		for {
			if _, err := lr.Next(); err == io.EOF {
				break
			}
		}
		rc.Close()
	}
}

// BenchmarkIngest reads the same file through detect.Open on one goroutine.
func BenchmarkIngest(b *testing.B) {
	path, size := benchFile(b)
	b.SetBytes(size)
	ctx := context.Background()
	for b.Loop() {
		r, _, err := detect.Open(ctx, path, detect.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			rec, err := r.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil || rec.Conv == nil {
				b.Fatal(err, rec.Bad)
			}
		}
		r.Close()
	}
}

// BenchmarkIngestParallel splits on one goroutine and decodes on
// GOMAXPROCS, the way the ingest engine is meant to use OpenText.
func BenchmarkIngestParallel(b *testing.B) {
	path, size := benchFile(b)
	b.SetBytes(size)
	ctx := context.Background()
	for b.Loop() {
		t, err := detect.OpenText(ctx, path, detect.Options{})
		if err != nil {
			b.Fatal(err)
		}
		batches := make(chan [][]byte, 8)
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for batch := range batches {
					for _, raw := range batch {
						if r := t.Decode(raw, conv.Source{File: t.File}); r.Conv == nil {
							b.Error(r.Bad)
						}
					}
				}
			})
		}
		var batch [][]byte
		for {
			ch, err := t.Chunks.Next()
			if err == io.EOF {
				break
			}
			batch = append(batch, bytes.Clone(ch.Bytes))
			if len(batch) == 64 {
				batches <- batch
				batch = nil
			}
		}
		batches <- batch
		close(batches)
		wg.Wait()
		t.Close()
	}
}
