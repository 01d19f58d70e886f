package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files instead of comparing")
	}
}

// TestEndToEndOutputsAreStable runs the e2e config against the scripted
// endpoint and compares every file it writes into run.out (the report in
// three formats and every export), plus every other export of the same
// run, byte for byte with testdata/e2e. It pins
// behaviour across refactors of the command line and the run library: a
// change to any output must be deliberate (go test -run Stable -update).
func TestEndToEndOutputsAreStable(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	srv := startScripted(t)
	dir := t.TempDir()
	vars := map[string]string{"AC3_E2E_BASE_URL": srv.URL}
	if out, err := runAppEnv(t, vars, "run", "--config", e2eConfig(t, dir, "5")); err != nil {
		t.Fatalf("ac3 run: %v\n%s", err, out)
	}
	outDir := filepath.Join(dir, "e2e")
	// The exports the config does not list, from the same run.
	db := filepath.Join(dir, "e2e.db")
	writeExtraExports(t, vars, db, outDir)
	golden := filepath.Join("testdata", "e2e")
	got := readDir(t, outDir)
	if flag.Lookup("update").Value.String() == "true" {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(golden, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(golden, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := readDir(t, golden)
	if len(want) == 0 {
		t.Fatalf("no golden files in %s (run with -update to create them)", golden)
	}
	for name, b := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("the run did not write %s", name)
		case !bytes.Equal(g, b):
			t.Errorf("%s differs from %s (%d bytes, want %d); run with -update if the change is intended", name, filepath.Join(golden, name), len(g), len(b))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("the run wrote %s, which has no golden file", name)
		}
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = b
	}
	return out
}
