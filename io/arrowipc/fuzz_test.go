package arrowipc_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/io/arrowipc"
)

// FuzzArrowReader feeds arbitrary bytes to OpenReader and Next. Errors are
// fine; a panic or a hang is not.
func FuzzArrowReader(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join(fixtureDir, "canonical.arrow")); err == nil {
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte("ARROW1\x00\x00"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.arrow")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := arrowipc.OpenReader(path)
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
