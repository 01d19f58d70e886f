package convert

import (
	"fmt"
	"path/filepath"

	"github.com/ac3/ac3/io/arrowipc"
	"github.com/ac3/ac3/io/compress"
	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
)

// FileWriter is an output file of conversations. It appears at its path
// only once Close has finished it; Abort removes what was written.
type FileWriter interface {
	Write(*conv.Conversation) error
	Close() error
	Abort() error
}

// Outputs lists the output extensions Create understands, for help texts.
func Outputs() []string {
	return []string{".parquet", ".arrow", ".jsonl", ".jsonl.zst", ".jsonl.gz"}
}

// Create picks the writer from path's extension: canonical Parquet
// (.parquet), Arrow IPC (.arrow, .arrows, .ipc) or canonical JSONL (.jsonl
// or .json, compressed when the name ends in a compression suffix).
func Create(path string) (FileWriter, error) {
	switch compress.InnerExt(path) {
	case ".parquet":
		if compress.FromName(path) == compress.None {
			return parquetio.Create(path, parquetio.WriterOptions{})
		}
	case ".arrow", ".arrows", ".ipc":
		if compress.FromName(path) == compress.None {
			return arrowipc.Create(path)
		}
	case ".jsonl", ".json":
		return jsonl.Create(path)
	}
	return nil, fmt.Errorf("cannot tell the output format of %s: use .parquet, .arrow or .jsonl (optionally .jsonl.zst or .jsonl.gz)", filepath.Base(path))
}
