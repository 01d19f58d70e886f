package parquetio_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ac3/ac3/io/parquetio"
)

func FuzzTmpSlow(f *testing.F) {
	for _, name := range []string{"canonical.parquet", "wildchat-bad.parquet"} {
		if data, err := os.ReadFile(filepath.Join(fixtureDir, name)); err == nil {
			f.Add(data)
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.parquet")
		os.WriteFile(path, data, 0o644)
		done := make(chan struct{})
		defer close(done)
		name := fmt.Sprintf("/tmp/slow-%x", sha256.Sum256(data))[:24]
		go func() {
			select {
			case <-done:
			case <-time.After(1 * time.Second):
				os.WriteFile(name, data, 0o644)
			}
		}()
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
