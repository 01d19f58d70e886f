package inspect_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/inspect"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update if the change is intended):\n%s", path, got)
	}
}

// sharedCounter is built once per test binary: loading a BPE table takes a
// noticeable fraction of a second and a Counter is safe to share.
var sharedCounter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New("") })

func counter(tb testing.TB) *tokens.Counter {
	tb.Helper()
	c, err := sharedCounter()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// build makes a conversation from alternating role/content pairs.
func build(id, system string, rc ...string) *conv.Conversation {
	c := &conv.Conversation{ID: id, System: system}
	for i := 0; i+1 < len(rc); i += 2 {
		c.Messages = append(c.Messages, conv.Message{Role: conv.Role(rc[i]), Content: rc[i+1]})
	}
	return c
}

func mustStrategy(tb testing.TB, name string) curate.Strategy {
	tb.Helper()
	s, err := curate.ByName(name, curate.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func renderConversation() *conv.Conversation {
	code := "Here is a version that reads the file line by line:\n\n```go\n" +
		strings.Repeat("for scanner.Scan() {\n\tline := scanner.Text()\n\tcount[line]++\n}\n", 12) +
		"```\n\nThis keeps memory flat however large the file is."
	return build("render-1", "You are a careful Go reviewer.",
		"user", "How do I count duplicate lines in a big file in Go?",
		"assistant", code,
		"user", "It must also ignore blank lines.",
		"assistant", "Add `if line == \"\" { continue }` before counting.",
		"user", "Now print the top 10 by count.")
}

func renderAll(t *testing.T, width int, names ...string) []byte {
	t.Helper()
	c := renderConversation()
	ws := curate.NewWorkspace(c, counter(t))
	var ctxs []curated.Context
	for _, name := range names {
		xs, err := mustStrategy(t, name).Contexts(t.Context(), c, 3, ws)
		if err != nil {
			t.Fatal(err)
		}
		ctxs = append(ctxs, xs...)
	}
	var b bytes.Buffer
	if err := inspect.Render(&b, c, ctxs, width); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRenderColumns(t *testing.T) {
	golden(t, "render_columns", renderAll(t, 140, "fc", "ao", "lt", "de"))
}

func TestRenderStacked(t *testing.T) {
	golden(t, "render_stacked", renderAll(t, 72, "fc", "ao", "concat", "filler"))
}

func TestRenderFitsWidth(t *testing.T) {
	for _, width := range []int{40, 72, 100, 140} {
		out := renderAll(t, width, "fc", "ao", "lt", "de", "concat", "filler")
		for i, line := range strings.Split(string(out), "\n") {
			if n := len([]rune(line)); n > width {
				t.Errorf("width %d: line %d has %d runes: %q", width, i+1, n, line)
			}
		}
	}
}
