// Package prompttest checks rendered prompts against golden files. It is for
// tests only.
//
// Run a package's tests with -update to rewrite its golden files:
//
//	go test ./stages/classify -run Prompt -update
package prompttest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
)

// init registers -update unless another test helper already did, so two
// golden helpers in one test binary do not collide.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files instead of comparing")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Format renders messages as the text stored in golden files: each message
// under a "=== role ===" line.
func Format(msgs []conv.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("=== " + string(m.Role) + " ===\n")
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

// Golden compares msgs with the golden file at path (relative to the test's
// package directory, conventionally testdata/golden/<case>.txt). With
// -update it writes the file instead. A mismatch fails the test and shows
// both texts.
func Golden(tb testing.TB, path string, msgs []conv.Message) {
	tb.Helper()
	got := Format(msgs)
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatalf("writing golden file: %v", err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatalf("writing golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if string(want) != got {
		tb.Errorf("rendered prompt differs from %s (run with -update if the change is intended)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
