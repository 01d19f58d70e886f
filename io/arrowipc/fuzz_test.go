package arrowipc_test

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzArrowReader feeds arbitrary bytes to OpenReader and Next with the
// oracle of issue 26: a read ends in an error that names the file, or in
// exactly the rows the metadata promises, counted by Arrow's own readers
// (for a file, by its footer and, agreeing with it, by its body read as a
// stream). A panic or a hang fails too.
//
// The oracle hands Arrow only inputs the reader accepted, whose metadata
// the reader's checks have passed: Arrow alone can allocate without bound
// on a corrupt message (a fatal error, not a panic).
func FuzzArrowReader(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join(fixtureDir, "canonical.arrow")); err == nil {
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	parts := splitConversations(f)
	f.Add(writeBatches(f, parts, false))
	f.Add(writeBatches(f, parts, true))
	f.Add([]byte("ARROW1\x00\x00"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.arrow")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		const maxRecords = 10_000
		got, err := readRecordsUpTo(path, maxRecords)
		if len(got) == maxRecords && err == nil {
			return // a claim of more rows than worth reading; no shortfall so far
		}
		if msg := checkRead(path, data, got, err); msg != "" {
			t.Fatal(msg)
		}
	})
}
