package inspect_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
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
	return renderWith(t, renderConversation(), width, names...)
}

func renderWith(t *testing.T, c *conv.Conversation, width int, names ...string) []byte {
	t.Helper()
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
		for _, c := range []*conv.Conversation{renderConversation(), wideConversation()} {
			out := renderWith(t, c, width, "fc", "ao", "lt", "de", "concat", "filler")
			for i, line := range strings.Split(string(out), "\n") {
				if n := cells(line); n > width {
					t.Errorf("%s, width %d: line %d is %d cells wide: %q", c.ID, width, i+1, n, line)
				}
			}
		}
	}
}

// cells counts terminal cells as a terminal shows them: East Asian wide
// runes and emoji two (a sequence joined by U+200D one glyph), variation
// selectors none, everything the layout draws with one. It is
// written out here rather than taken from the package, so the test checks
// the package's measure against another.
func cells(s string) int {
	n, joined := 0, false
	for _, r := range s {
		switch {
		case r == 0x200D: // a zero-width joiner: the next rune joins this glyph
			joined = true
		case r >= 0xFE00 && r <= 0xFE0F: // variation selectors
		case joined:
			joined = false
		case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF, r >= 0xAC00 && r <= 0xD7A3,
			r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60,
			r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F, r >= 0x1F900 && r <= 0x1F9FF:
			n += 2
		default:
			n++
		}
	}
	return n
}

// wideConversation mixes Chinese, Japanese, Korean, emoji and ASCII.
func wideConversation() *conv.Conversation {
	return build("wide-1", "你是一个细心的助手。",
		"user", "请把这段话翻译成英文：今天天气很好，我们去公园散步吧。🌞",
		"assistant", "The weather is nice today, let's go for a walk in the park. 🚶‍♀️🌳",
		"user", "日本語でもお願いします。それと한국어로도 번역해 주세요 🙏",
		"assistant", "今日はいい天気ですね。公園を散歩しましょう。/ 오늘 날씨가 좋네요. 공원에 산책하러 가요.",
		"user", "谢谢！最后，用一句话总结这三种语言的差别。")
}

// In columns, wide characters keep the gutters straight: every line has
// its "│" at the same cells.
func TestRenderWideCharactersAlign(t *testing.T) {
	out := renderWith(t, wideConversation(), 120, "fc", "ao", "lt")
	golden(t, "render_wide", out)
	var want []int
	for i, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if !strings.Contains(line, "│") {
			continue
		}
		var at []int
		col := 0
		for _, r := range line {
			if r == '│' {
				at = append(at, col)
			}
			col += cells(string(r))
		}
		if want == nil {
			want = at
		}
		// The last column is not padded, so a short line may end early:
		// the gutters it has must sit where the others' do.
		if len(at) > len(want) || !slices.Equal(at, want[:len(at)]) {
			t.Errorf("line %d has its gutters at cells %v, want %v: %q", i+1, at, want, line)
		}
	}
	if len(want) != 2 {
		t.Fatalf("found gutters at %v; want two columns' worth", want)
	}
}

func TestRenderAnswersAndVerdicts(t *testing.T) {
	answers := []inspect.Answer{
		{Strategy: "fc", Sample: 0, Text: "Here are the top 10:\n\n```go\nsort.Slice(keys, func(i, j int) bool { return count[keys[i]] > count[keys[j]] })\n```", Tokens: 42, Model: "resp-m"},
		{Strategy: "gated-reset", Sample: 0, Text: "按次数排序后取前十行：先统计，再排序，最后打印。🙂", Tokens: 30, Model: "resp-m"},
		{Strategy: "ao", Failed: "parsing model answer (3 tries): empty reply"},
	}
	verdicts := []inspect.Verdict{
		{Pair: "gated-reset:fc", A: "gated-reset", B: "fc", Dimension: "quality", Outcome: "gated-reset", Calls: []inspect.Call{
			{First: "gated-reset", Winner: "gated-reset", Justification: "It keeps the blank-line rule the user set in turn 2 and prints exactly ten lines."},
			{First: "fc", Winner: "gated-reset", Justification: "回答保留了第二轮的要求。"},
		}},
		{Pair: "gated-reset:fc", A: "gated-reset", B: "fc", Dimension: "on_topic", Outcome: "tie", Calls: []inspect.Call{
			{First: "gated-reset", Winner: "tie"}, {First: "fc", Winner: "fc", Justification: "Both stay on the thread."},
		}},
		{Pair: "ao:fc", A: "ao", B: "fc", Dimension: "quality", Outcome: "tie", Identical: true},
		{Pair: "fc:de", Failed: "parsing model answer (3 tries): unknown outcome \"draw\""},
	}
	var b bytes.Buffer
	for _, width := range []int{100, 50} {
		if err := inspect.RenderAnswers(&b, answers, width); err != nil {
			t.Fatal(err)
		}
		if err := inspect.RenderVerdicts(&b, verdicts, width); err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(b.String(), "\n") {
			if n := cells(line); n > 100 {
				t.Errorf("line %d is %d cells wide: %q", i+1, n, line)
			}
		}
	}
	golden(t, "render_judged", b.Bytes())
}
