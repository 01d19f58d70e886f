//go:build linux

package parquetio

import "syscall"

// osChunks says chunkAllocator can map memory here.
const osChunks = true

// osChunk is one anonymous mapping.
type osChunk struct {
	mapping []byte // as syscall.Mmap returned it, for Munmap
}

// mapChunk maps n bytes (a multiple of chunkAlign) of zeroed memory. The
// mapping is one chunkAlign larger so that mem can start on a huge-page
// boundary, and mem is marked for transparent huge pages: a 2 MB page is
// one fault instead of 512, where the kernel has them to give (a system
// that turned them off still serves small pages, and the untouched spare
// costs only address space).
func mapChunk(n int) (*chunk, bool) {
	m, err := syscall.Mmap(-1, 0, n+chunkAlign, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, false
	}
	off := 0
	if r := int(uintptr(unsafePointer(m)) % chunkAlign); r != 0 {
		off = chunkAlign - r
	}
	mem := m[off : off+n : off+n]
	_ = syscall.Madvise(mem, syscall.MADV_HUGEPAGE) // advice only
	return &chunk{mem: mem, os: osChunk{mapping: m}}, true
}

func (c osChunk) unmap() {
	if c.mapping != nil {
		_ = syscall.Munmap(c.mapping)
	}
}
