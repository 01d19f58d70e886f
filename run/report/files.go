package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/ac3/ac3/io/atomicfile"
)

// writeFile writes path with write through io/atomicfile, as every output
// of the module is written: a reader (or a crash) never sees half a file.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer f.Abort()
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}
