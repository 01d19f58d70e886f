package parquetio

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
)

// TestChunkAllocator walks the allocator through what Arrow asks of it:
// small buffers stay on the Go heap, large ones come from chunks, growing
// within a chunk keeps it, growing past it copies into another, and a freed
// chunk serves the next request it fits instead of a new mapping.
func TestChunkAllocator(t *testing.T) {
	if !osChunks {
		t.Skip("no chunks on this platform")
	}
	a := newChunkAllocator()
	defer a.close()

	small := a.Allocate(100)
	if len(small) != 100 || len(a.live) != 0 {
		t.Fatalf("a small buffer: len %d, %d chunks live; want 100 bytes on the heap", len(small), len(a.live))
	}
	a.Free(small) // not ours: ignored

	big := a.Allocate(minChunk)
	if len(big) != minChunk || len(a.live) != 1 {
		t.Fatalf("a large buffer: len %d, %d chunks live; want %d bytes in a chunk", len(big), len(a.live), minChunk)
	}
	for i := range big {
		big[i] = byte(i)
	}
	grown := a.Reallocate(minChunk+100, big)
	if &grown[0] != &big[0] {
		t.Error("growing within the chunk moved the buffer")
	}
	huge := a.Reallocate(8*minChunk, grown)
	if len(huge) != 8*minChunk || len(a.live) != 1 || len(a.free) != 1 {
		t.Fatalf("growing past the chunk: len %d, %d live, %d free; want a new chunk and the old one free", len(huge), len(a.live), len(a.free))
	}
	for i := range minChunk {
		if huge[i] != byte(i) {
			t.Fatalf("byte %d is %d after the copy, want %d", i, huge[i], byte(i))
		}
	}
	again := a.Allocate(minChunk + 50)
	if len(a.free) != 0 || len(a.live) != 2 {
		t.Errorf("after reusing the free chunk: %d free, %d live; want 0 and 2", len(a.free), len(a.live))
	}
	a.Free(again)
	a.Free(huge)
	if len(a.live) != 0 || len(a.free) != 2 {
		t.Errorf("after freeing both: %d live, %d free; want 0 and 2", len(a.live), len(a.free))
	}
	a.close()
	if len(a.free) != 0 || a.nfree != 0 {
		t.Errorf("close left %d free chunks (%d bytes)", len(a.free), a.nfree)
	}
	// After close, a freed chunk goes straight back to the OS.
	late := a.Allocate(minChunk)
	a.Free(late)
	if len(a.live) != 0 || len(a.free) != 0 {
		t.Errorf("a chunk freed after close: %d live, %d free; want none", len(a.live), len(a.free))
	}
}

// The free list never holds more than maxFreeChunkBytes.
func TestChunkAllocatorBoundsFreeList(t *testing.T) {
	if !osChunks {
		t.Skip("no chunks on this platform")
	}
	a := newChunkAllocator()
	defer a.close()
	var bufs [][]byte
	for i := range 12 {
		bufs = append(bufs, a.Allocate(minChunk*(i%4+2)+i))
	}
	for _, b := range bufs {
		a.Free(b)
	}
	if a.nfree > maxFreeChunkBytes {
		t.Errorf("free list holds %d bytes, more than %d", a.nfree, maxFreeChunkBytes)
	}
	if len(a.live) != 0 {
		t.Errorf("%d chunks live after freeing all", len(a.live))
	}
}

// bigConversations have megabytes of text per row group, so the builder's
// data buffers and the encoders' column chunks come from chunks.
func bigConversations(n int) []*conv.Conversation {
	convs := make([]*conv.Conversation, n)
	for i := range convs {
		text := strings.Repeat(fmt.Sprintf("turn %d of a long talk, ", i), 200+i%50)
		convs[i] = &conv.Conversation{
			ID:     fmt.Sprintf("c%05d", i),
			Format: "canonical",
			Messages: []conv.Message{
				{Role: conv.User, Content: text},
				{Role: conv.Assistant, Content: strings.ToUpper(text)},
			},
			Meta: []byte(fmt.Sprintf(`{"n":%d,"note":%q}`, i, text[:len(text)/3])),
		}
	}
	return convs
}

// A Writer with chunks writes the same bytes as one on the Go heap, and
// every chunk is free and unmapped once it is closed or aborted (the row
// group in flight and the one Arrow still holds included), so none is
// leaked or reused while something reads it.
func TestWriterChunks(t *testing.T) {
	if !osChunks {
		t.Skip("no chunks on this platform")
	}
	convs := bigConversations(1500) // ~24 KB each: 36 MB, nine row groups of 4 MiB
	opts := WriterOptions{RowGroupBytes: 4 << 20}
	write := func(mem *chunkAllocator, abortAfter int) []byte {
		t.Helper()
		var buf bytes.Buffer
		w, err := newWriterMem(&buf, nil, opts, mem)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range convs {
			if i == abortAfter {
				if err := w.Abort(); err != nil {
					t.Fatal(err)
				}
				return nil
			}
			if err := w.Write(c); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	heap := write(nil, -1)
	mem := newChunkAllocator()
	chunked := write(mem, -1)
	if !bytes.Equal(heap, chunked) {
		t.Fatalf("with chunks the file differs: %d bytes against %d on the heap", len(chunked), len(heap))
	}
	if mem.mapped == 0 {
		t.Error("no chunk was mapped: the test's row groups are too small to say anything")
	}
	if len(mem.live) != 0 || len(mem.free) != 0 {
		t.Errorf("after Close: %d chunks live, %d free; want none", len(mem.live), len(mem.free))
	}
	mem = newChunkAllocator()
	write(mem, 700)
	if len(mem.live) != 0 || len(mem.free) != 0 {
		t.Errorf("after Abort: %d chunks live, %d free; want none", len(mem.live), len(mem.free))
	}
}

// A Writer whose output fails still returns every chunk.
func TestWriterChunksAfterError(t *testing.T) {
	if !osChunks {
		t.Skip("no chunks on this platform")
	}
	mem := newChunkAllocator()
	w, err := newWriterMem(&failingWriter{limit: 64 << 10}, nil, WriterOptions{RowGroupBytes: 4 << 20}, mem)
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for _, c := range bigConversations(1500) {
		if werr = w.Write(c); werr != nil {
			break
		}
	}
	if err := w.Close(); err == nil || !errors.Is(errors.Join(werr, err), errFailing) {
		t.Fatalf("Close = %v (Write: %v), want the output's error", err, werr)
	}
	if len(mem.live) != 0 || len(mem.free) != 0 {
		t.Errorf("after a failed Close: %d chunks live, %d free; want none", len(mem.live), len(mem.free))
	}
}

var errFailing = errors.New("no space left")

// failingWriter takes limit bytes, then fails.
type failingWriter struct{ limit, n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		return 0, errFailing
	}
	f.n += len(p)
	return len(p), nil
}
