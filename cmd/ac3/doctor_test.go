package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/run"
)

func runDoctorApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	var out bytes.Buffer
	app := newApp(&env{stop: make(chan struct{}), stdout: &out, stderr: &out, getenv: func(string) string { return "" }})
	err := app.RunContext(ctx, append([]string{"ac3"}, args...))
	return out.String(), err
}

func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "run.db")
	if out, err := runDoctorApp(t, "ingest", "--db", db, filepath.Join("..", "..", "fixtures", "wildchat", "wildchat-1m-sample10.jsonl")); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	if out, err := runDoctorApp(t, "curate", "--db", db, "--strategies", "fc,ao"); err != nil {
		t.Fatalf("curate: %v\n%s", err, out)
	}
	out, err := runDoctorApp(t, "doctor", "--db", db)
	if err != nil || !strings.Contains(out, "ok: "+db+" is sound") {
		t.Fatalf("doctor on a sound run: %v\n%s", err, out)
	}

	// Garbage over a few pages in the middle of the file.
	st, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	junk := bytes.Repeat([]byte{0xa5, 0x5a, 0x00, 0xff}, 3*page/4)
	if _, err := f.WriteAt(junk, st.Size()/2/page*page); err != nil {
		t.Fatal(err)
	}
	f.Close()

	out, err = runDoctorApp(t, "doctor", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "run file "+db+" is damaged") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("doctor on a damaged run: error %v; want one line saying it is damaged\n%s", err, out)
	}
	for _, want := range []string{"damaged: the check found", "what a recovery would keep", "conversations", "--recover-to NEW.db"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	// Every command refuses the damaged file now, curate included.
	if out, err := runDoctorApp(t, "curate", "--db", db, "--strategies", "fc,ao"); err == nil || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("curate on a damaged run: %v\n%s", err, out)
	}

	rec := filepath.Join(dir, "recovered.db")
	out, err = runDoctorApp(t, "doctor", "--db", db, "--recover-to", rec)
	if err != nil || !strings.Contains(out, " into "+rec+" (checked sound, every copied record read back)") {
		t.Fatalf("doctor --recover-to: %v\n%s", err, out)
	}
	if out, err := runDoctorApp(t, "doctor", "--db", rec); err != nil || !strings.Contains(out, "is sound") {
		t.Fatalf("doctor on the recovered run: %v\n%s", err, out)
	}
	// The recovered run resumes: curate redoes only what was lost.
	if out, err := runDoctorApp(t, "curate", "--db", rec, "--strategies", "fc,ao"); err != nil {
		t.Fatalf("curate on the recovered run: %v\n%s", err, out)
	}
	if out, err := runDoctorApp(t, "status", "--db", rec); err != nil || !strings.Contains(out, "pending") {
		t.Fatalf("status of the recovered run: %v\n%s", err, out)
	}
}

// TestDoctorTellsTheTruth damages a run file the ways a disk or a copy
// does and checks what doctor says of each: never "sound", and
// --recover-to exits 1, leaving no file, when it recovered nothing.
func TestDoctorTellsTheTruth(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "run.db")
	if out, err := runDoctorApp(t, "ingest", "--db", src, filepath.Join("..", "..", "fixtures", "wildchat", "wildchat-1m-sample10.jsonl")); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	if out, err := runDoctorApp(t, "curate", "--db", src, "--strategies", "fc,ao,lt,de,concat,filler"); err != nil {
		t.Fatalf("curate: %v\n%s", err, out)
	}
	intact, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	pages := int64(len(intact)) / page
	if pages < 40 {
		t.Fatalf("the run has %d pages; the test needs more", pages)
	}
	for _, c := range []struct {
		name    string
		damage  func([]byte) []byte
		nothing bool // no record can be recovered
	}{
		{"cut by one byte", func(b []byte) []byte { return b[:len(b)-1] }, false},
		{"cut in half", func(b []byte) []byte { return b[:pages/2*page] }, false},
		{"missing its last ten pages", func(b []byte) []byte { return b[:(pages-10)*page] }, false},
		{"page 1 corrupted", func(b []byte) []byte {
			for i := 200; i < 264; i++ {
				b[i] ^= 0xff
			}
			return b
		}, true},
		{"one byte flipped inside a record", func(b []byte) []byte {
			b[(pages/2)*page+page-300] ^= 0x04
			return b
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			db := filepath.Join(d, "run.db")
			if err := os.WriteFile(db, c.damage(bytes.Clone(intact)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := runDoctorApp(t, "doctor", "--db", db)
			if err == nil || strings.Contains(out, "is sound") {
				t.Fatalf("doctor on a file %s: %v\n%s", c.name, err, out)
			}
			rec := filepath.Join(d, "rec.db")
			out, err = runDoctorApp(t, "doctor", "--db", db, "--recover-to", rec)
			_, statErr := os.Stat(rec)
			if c.nothing {
				if run.ExitCode(err) != run.ExitError || !strings.Contains(err.Error(), "nothing could be recovered") || statErr == nil {
					t.Fatalf("recovering from a file with %s: exit %d (%v), new file left: %v\n%s", c.name, run.ExitCode(err), err, statErr == nil, out)
				}
				return
			}
			if err != nil || statErr != nil || !strings.Contains(out, "read back") {
				t.Fatalf("recovering from a file %s: %v\n%s", c.name, err, out)
			}
			if out, err := runDoctorApp(t, "doctor", "--db", rec); err != nil || !strings.Contains(out, "is sound") {
				t.Fatalf("the recovered run: %v\n%s", err, out)
			}
			if out, err := runDoctorApp(t, "status", "--db", rec); err != nil || !strings.Contains(out, "conversations") {
				t.Fatalf("status of the recovered run: %v\n%s", err, out)
			}
		})
	}
}
