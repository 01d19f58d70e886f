package convert

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/sourcegraph/conc/stream"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/record"
)

// batch is a run of consecutive chunks of one file. The splitter copies
// their bytes back to back into buf (a chunk's bytes live only until the
// next split), a worker decodes and filters them into out, and the stream's
// callback writes out in order.
type batch struct {
	buf    []byte
	chunks []jsonl.Chunk // Bytes nil until decode; ends says where each stops
	ends   []int
	out    []verdict
}

type verdict struct {
	rec    record.Record
	keep   bool
	reason string
}

var batches = sync.Pool{New: func() any { return new(batch) }}

func (b *batch) add(ch jsonl.Chunk) {
	b.buf = append(b.buf, ch.Bytes...)
	ch.Bytes = nil
	b.chunks = append(b.chunks, ch)
	b.ends = append(b.ends, len(b.buf))
}

// decode fills out. Decoders copy what they keep, so buf is free after.
func (b *batch) decode(file string, dec jsonl.DecodeFunc, s *sink) {
	start := 0
	for i, ch := range b.chunks {
		ch.Bytes = b.buf[start:b.ends[i]:b.ends[i]]
		start = b.ends[i]
		rec := jsonl.DecodeChunk(ch, file, dec)
		keep, reason := s.verdict(rec)
		b.out = append(b.out, verdict{rec: rec, keep: keep, reason: reason})
	}
}

// release returns b to the pool, unless one huge record made its buffer
// too big to be worth keeping around.
func (b *batch) release(maxBytes int) {
	if cap(b.buf) > 2*maxBytes {
		return
	}
	clear(b.out) // drop the conversations, they are written
	b.buf, b.chunks, b.ends, b.out = b.buf[:0], b.chunks[:0], b.ends[:0], b.out[:0]
	batches.Put(b)
}

// runText converts one text input: this goroutine splits it into batches,
// o.workers goroutines decode and filter them, and the stream's callback
// goroutine writes them in input order. At most about o.workers+3 batches
// exist at once (one filling, the queued and running ones, one writing),
// so memory stays bounded whatever the file size.
func runText(ctx context.Context, path string, t *detect.Text, s *sink, o options) error {
	defer t.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var werr error // set by callbacks only; read after Wait
	st := stream.New().WithMaxGoroutines(o.workers)
	submit := func(b *batch) {
		st.Go(func() stream.Callback {
			if ctx.Err() == nil {
				b.decode(t.File, t.Decode, s)
			}
			return func() {
				defer b.release(o.batchBytes)
				if werr != nil || ctx.Err() != nil {
					return
				}
				for _, v := range b.out {
					if err := s.put(v.rec, v.keep, v.reason, path); err != nil {
						werr = err
						cancel()
						return
					}
				}
			}
		})
	}

	var rerr error
	b := batches.Get().(*batch)
	for ctx.Err() == nil {
		ch, err := t.Chunks.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			rerr = fmt.Errorf("reading %s near line %d: %w", path, t.Chunks.Line(), err)
			break
		}
		b.add(ch)
		if len(b.chunks) >= o.batchLines || len(b.buf) >= o.batchBytes {
			submit(b)
			b = batches.Get().(*batch)
		}
	}
	if len(b.chunks) > 0 {
		// Also after a read error: the records before it are good.
		submit(b)
	}
	st.Wait()

	switch {
	case werr != nil:
		return werr
	case rerr != nil:
		return rerr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}
