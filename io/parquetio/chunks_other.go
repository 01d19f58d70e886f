//go:build !linux

package parquetio

// osChunks says chunkAllocator cannot map memory here: Writers build row
// groups on the Go heap.
const osChunks = false

type osChunk struct{}

func mapChunk(int) (*chunk, bool) { return nil, false }

func (osChunk) unmap() {}
