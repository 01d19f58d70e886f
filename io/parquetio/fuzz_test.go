package parquetio_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/io/parquetio"
)

// FuzzParquetReader feeds arbitrary bytes to OpenReader and Next. Errors are
// fine; a panic or a hang is not.
func FuzzParquetReader(f *testing.F) {
	for _, name := range []string{"canonical.parquet", "wildchat-bad.parquet"} {
		if data, err := os.ReadFile(filepath.Join(fixtureDir, name)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, _, err := parquetio.OpenReader(path)
		if err != nil {
			return
		}
		defer r.Close()
		for range 10_000 {
			if _, err := r.Next(context.Background()); err != nil {
				return
			}
		}
	})
}
