package parquetio

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// A Writer's row builder needs a few large buffers per row group (the text
// of the messages and the metadata, megabytes each) and frees them once the
// row group is written. From the Go heap each one is memory the runtime
// zeroes, that Arrow zeroes again, and that the kernel often has to fault
// in page by page: on the one goroutine that fills the builder this was
// about a tenth of a conversion's CPU time. Keeping freed buffers in a Go
// pool for the next row group saves that, but the pooled bytes count as
// live heap, so the collector lets the heap grow twice as far above them:
// peak RSS rose by about 95 MB.
//
// chunkAllocator keeps those large buffers outside the Go heap instead
// (mapped from the OS where the platform allows, see chunks_linux.go) and
// hands a freed one to the next request it fits. The collector neither
// scans nor counts them, so the heap's goal shrinks by what they hold, and
// once a chunk has been used its pages are resident: no zeroing by the
// runtime, no page faults. Requests under minChunk go to the Go heap as
// before.
//
// Arrow frees a buffer when its last reference is released (the builder's
// Release, a record's Release once its row group is written), so a chunk
// is reused only after nothing reads it. The free list is bounded by
// maxFreeChunkBytes; a chunk beyond it is returned to the OS.
type chunkAllocator struct {
	small memory.Allocator

	mu     sync.Mutex
	live   map[*byte]*chunk // by the address of the first byte handed out
	free   []*chunk         // oldest first
	nfree  int              // bytes in free
	mapped int              // chunks mapped so far
	closed bool
}

// chunk is one mapping: mem is what Allocate hands out slices of; the
// platform's part keeps whatever it needs to unmap it.
type chunk struct {
	mem []byte
	os  osChunk
}

const (
	// minChunk is the smallest request served from a chunk: a row group's
	// offsets and validity bitmaps are far smaller and stay on the heap.
	minChunk = 1 << 20
	// chunkAlign rounds chunk sizes (a huge page on amd64 and arm64 Linux).
	chunkAlign = 2 << 20
	// maxFreeChunkBytes bounds the free list: two row groups' worth of
	// text at the default RowGroupBytes, with room for the reservation's
	// extra eighth.
	maxFreeChunkBytes = 4 * DefaultRowGroupBytes
)

// newChunkAllocator returns the allocator for a Writer's builder, or
// nil when the platform has no way to map memory outside the Go heap.
func newChunkAllocator() *chunkAllocator {
	if !osChunks {
		return nil
	}
	return &chunkAllocator{small: memory.NewGoAllocator(), live: map[*byte]*chunk{}}
}

func (a *chunkAllocator) Allocate(size int) []byte {
	if size < minChunk {
		return a.small.Allocate(size)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.take(size)
}

// take hands out the smallest free chunk that holds size bytes, or maps a
// new one. The caller holds mu.
func (a *chunkAllocator) take(size int) []byte {
	best := -1
	for i, c := range a.free {
		if len(c.mem) >= size && (best < 0 || len(c.mem) < len(a.free[best].mem)) {
			best = i
		}
	}
	var c *chunk
	if best >= 0 {
		c = a.free[best]
		a.free = append(a.free[:best], a.free[best+1:]...)
		a.nfree -= len(c.mem)
	} else {
		// An eighth more than asked: the next row group's buffers are
		// a little larger or smaller than this one's, and a chunk that
		// fits them all is reused instead of replaced.
		n := size + size/8
		n = (n + chunkAlign - 1) / chunkAlign * chunkAlign
		var ok bool
		if c, ok = mapChunk(n); !ok {
			return a.small.Allocate(size)
		}
		a.mapped++
	}
	b := c.mem[:size]
	a.live[unsafe.SliceData(b)] = c
	return b
}

func (a *chunkAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	if size < minChunk {
		return a.small.Reallocate(size, b)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	nb := a.take(size)
	copy(nb, b)
	a.release(b)
	return nb
}

func (a *chunkAllocator) Free(b []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.release(b)
}

// release puts b's chunk, if it is one, on the free list. The caller holds
// mu.
func (a *chunkAllocator) release(b []byte) {
	if cap(b) == 0 {
		return
	}
	p := unsafe.SliceData(b)
	c, ok := a.live[p]
	if !ok {
		return // from the Go heap: the collector frees it
	}
	delete(a.live, p)
	if a.closed {
		c.os.unmap()
		return
	}
	a.free = append(a.free, c)
	a.nfree += len(c.mem)
	for a.nfree > maxFreeChunkBytes && len(a.free) > 0 {
		old := a.free[0]
		a.free = a.free[1:]
		a.nfree -= len(old.mem)
		old.os.unmap()
	}
}

// close returns the free chunks to the OS; chunks still in use are
// returned when they are freed. Calling it on a nil allocator does
// nothing.
func (a *chunkAllocator) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for _, c := range a.free {
		c.os.unmap()
	}
	a.free, a.nfree = nil, 0
}

// unsafePointer is the address of b's first byte.
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
