package parquetio_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/io/parquetio"
)

// FuzzParquetReader feeds arbitrary bytes to OpenReader and Next with the
// oracle of issue 26: a read ends in an error that names the file, or in
// exactly the rows the file's metadata promises (by Arrow's reading of the
// footer, not ours). A panic or a hang fails too.
func FuzzParquetReader(f *testing.F) {
	for _, name := range []string{"canonical.parquet", "wildchat-bad.parquet", "wildchat-sample5.parquet"} {
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
		// A few bytes can declare a billion null rows; past maxRecords
		// the rows read so far must not exceed the promise.
		const maxRecords = 10_000
		got, err := readRecordsUpTo(path, maxRecords)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		rows, merr := metadataRows(path)
		switch {
		case merr != nil:
			t.Fatalf("read %d records with no error, but Arrow cannot read the metadata: %v", len(got), merr)
		case len(got) == maxRecords && int64(len(got)) > rows:
			t.Fatalf("read at least %d records where the metadata promises %d", len(got), rows)
		case len(got) < maxRecords && int64(len(got)) != rows:
			t.Fatalf("read %d records with no error where the metadata promises %d", len(got), rows)
		}
	})
}

// TestCorruptPagesAreErrors replays two fuzzer finds in the nested
// conversation column of a WildChat-shaped file: a page typed as a
// dictionary page without a dictionary page header (Arrow dereferenced nil;
// when pqarrow read the file that was on a goroutine of its own and killed
// the process), and a chunk whose
// pages hold fewer values than its metadata says (Arrow read page headers
// from stale buffer bytes past the chunk's end and spun forever). Both must
// be an error that names the file and the row group.
func TestCorruptPagesAreErrors(t *testing.T) {
	for _, name := range []string{"crash-dict-page-header", "hang-header-past-chunk-end"} {
		t.Run(name, func(t *testing.T) {
			data := readCorpusEntry(t, filepath.Join("testdata/fuzz/FuzzParquetReader", name))
			path := writeTemp(t, "corrupt.parquet", data)
			r, _, err := parquetio.OpenReader(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for range 10_000 {
				_, err := r.Next(context.Background())
				if err == nil {
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "row group 0") {
					t.Errorf("error does not name the file and row group: %v", msg)
				}
				return
			}
			t.Fatal("no error")
		})
	}
}

// readCorpusEntry decodes a one-value []byte fuzz corpus file.
func readCorpusEntry(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a one-value corpus file", name)
	}
	quoted, ok := strings.CutPrefix(lines[1], "[]byte(")
	if quoted, ok = strings.CutSuffix(quoted, ")"); !ok {
		t.Fatalf("%s: not a []byte corpus value", name)
	}
	s, err := strconv.Unquote(quoted)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return []byte(s)
}
