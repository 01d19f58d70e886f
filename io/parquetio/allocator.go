package parquetio

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Arrow's readers size buffers from lengths declared in the file. A corrupt
// length of, say, 32 GB makes them ask for 32 GB, and a failed allocation in
// Go is a fatal error that no recover can catch: the whole process dies.
// LimitedAllocator turns such requests into a panic that the readers'
// CatchPanic does catch, so a corrupt file becomes a *MalformedError.

// maxAllocation caps any single buffer. Arrow's utf8 arrays use 32-bit
// offsets, so no legitimate buffer of ours exceeds 2 GiB anyway.
const maxAllocation = 2 << 30

// minAllocationLimit is the cap for small files: enough for any batch or
// decompressed page a small file can really hold.
const minAllocationLimit = 64 << 20

// LimitedAllocator returns an allocator for reading a file of fileSize
// bytes that refuses (by panicking, see CatchPanic) any single allocation
// larger than the file could plausibly need: 256 times its size (room for
// decompression), at least 64 MiB and at most 2 GiB.
func LimitedAllocator(fileSize int64) memory.Allocator {
	limit := int64(maxAllocation)
	if fileSize < limit/256 {
		limit = max(fileSize*256, minAllocationLimit)
	}
	return &limitedAllocator{Allocator: memory.NewGoAllocator(), limit: int(limit)}
}

type limitedAllocator struct {
	memory.Allocator
	limit int
}

func (a *limitedAllocator) check(size int) {
	if size > a.limit || size < 0 {
		panic(fmt.Sprintf("refusing to allocate %d bytes (limit %d): the file declares impossible sizes", size, a.limit))
	}
}

func (a *limitedAllocator) Allocate(size int) []byte {
	a.check(size)
	return a.Allocator.Allocate(size)
}

func (a *limitedAllocator) Reallocate(size int, b []byte) []byte {
	a.check(size)
	return a.Allocator.Reallocate(size, b)
}
