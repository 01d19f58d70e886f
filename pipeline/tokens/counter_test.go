package tokens_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
)

// counters keeps one Counter per encoding for the whole test binary, since
// loading a table is the slow part and a Counter is safe to share.
var (
	countersMu sync.Mutex
	counters   = map[string]*tokens.Counter{}
)

func mustCounter(tb testing.TB, enc string) *tokens.Counter {
	tb.Helper()
	countersMu.Lock()
	defer countersMu.Unlock()
	if c, ok := counters[enc]; ok {
		return c
	}
	c, err := tokens.New(enc)
	if err != nil {
		tb.Fatal(err)
	}
	counters[enc] = c
	return c
}

func TestCountKnownValues(t *testing.T) {
	// Reference counts match the token ids OpenAI's cookbook shows for these
	// strings (e.g. cl100k_base "tiktoken is great!" = 83 1609 5963 374 2294 0).
	cases := []struct {
		enc  string
		text string
		want int
	}{
		{"o200k_base", "", 0},
		{"o200k_base", "hello world", 2},
		{"cl100k_base", "hello world", 2},
		{"cl100k_base", "tiktoken is great!", 6},
		{"o200k_base", "tiktoken is great!", 6}, // ids 83 8251 2488 382 2212 0
		{"p50k_base", "hello world", 2},
		{"r50k_base", "hello world", 2},
		// A special-token marker in user text is plain text, not one token.
		{"cl100k_base", "<|endoftext|>", 7},
	}
	for _, tc := range cases {
		t.Run(tc.enc+"/"+tc.text, func(t *testing.T) {
			c := mustCounter(t, tc.enc)
			if c.Encoding() != tc.enc {
				t.Errorf("Encoding() = %q, want %q", c.Encoding(), tc.enc)
			}
			if got := c.Count(tc.text); got != tc.want {
				t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
}

func TestNewDefaultsAndRejectsUnknown(t *testing.T) {
	c := mustCounter(t, "")
	if c.Encoding() != tokens.DefaultEncoding {
		t.Errorf("default encoding = %q, want %q", c.Encoding(), tokens.DefaultEncoding)
	}
	_, err := tokens.New("gpt2-nope")
	if err == nil || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("unknown encoding error should list the supported ones, got %v", err)
	}
}

func TestChatFraming(t *testing.T) {
	c := mustCounter(t, "")
	for _, role := range []string{"system", "user", "assistant", "tool"} {
		if got := c.Framing(role); got != 4 {
			t.Errorf("Framing(%q) = %d, want 4", role, got)
		}
	}
	msgs := []conv.Message{
		{Role: conv.System, Content: "Be brief."},
		{Role: conv.User, Content: "hello world"},
	}
	// Per message: content + 3 + 1 (role); then 3 for the reply primer.
	want := (c.Count("Be brief.") + 4) + (2 + 4) + 3
	if got := c.CountMessages(msgs); got != want {
		t.Errorf("CountMessages = %d, want %d", got, want)
	}
	if got := tokens.Total(c.MessageCost("system", c.Count("Be brief.")), c.MessageCost("user", 2)); got != want {
		t.Errorf("Total = %d, want %d", got, want)
	}
	if got := tokens.Total(); got != tokens.ReplyPrimer {
		t.Errorf("empty Total = %d, want %d", got, tokens.ReplyPrimer)
	}
}

func TestCountConcurrent(t *testing.T) {
	c := mustCounter(t, "")
	texts := []string{
		"The quick brown fox jumps over the lazy dog.",
		strings.Repeat("func main() { fmt.Println(\"hi\") }\n", 20),
		"Ünïcödé — 日本語のテキスト, emojis 🙂🙃 and numbers 1234567.",
	}
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = c.Count(s)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 10 {
				i := (g + k) % len(texts)
				if got := c.Count(texts[i]); got != want[i] {
					t.Errorf("concurrent Count(text %d) = %d, want %d", i, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkCount(b *testing.B) {
	c := mustCounter(b, "")
	var sb strings.Builder
	for i := range 40 {
		sb.WriteString("Paragraph ")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString(": the river runs past the old mill, and the town keeps its market on Tuesdays. ")
		sb.WriteString("for i := 0; i < n; i++ { total += values[i] * 2 }\n")
	}
	text := sb.String()
	n := c.Count(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		c.Count(text)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// longRuns are inputs whose long same-kind runs make plain BPE quadratic;
// Count cuts them (see cuts_test.go for where), so they stay cheap. Their
// speed is measured by BenchmarkCountLongRuns, not asserted here: a timed
// assertion fails on a loaded machine.
var longRuns = map[string]string{
	"spaces":   strings.Repeat(" ", 100_000) + "x",
	"letters":  strings.Repeat("a", 50_000),
	"mixed ws": strings.Repeat("\n \t", 30_000),
	"symbols":  strings.Repeat("=", 50_000),
}

func TestCountLongRuns(t *testing.T) {
	c := mustCounter(t, "")
	for name, s := range longRuns {
		t.Run(name, func(t *testing.T) {
			if n := c.Count(s); n <= 0 || n > len(s) {
				t.Errorf("Count = %d for %d bytes", n, len(s))
			}
		})
	}
}

func BenchmarkCountLongRuns(b *testing.B) {
	c := mustCounter(b, "")
	for name, s := range longRuns {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				c.Count(s)
			}
		})
	}
}

// TokenEnds tokenizes as Count does: as many ends as tokens, rising, the
// last at the text's end; long runs are cut the same way.
func TestTokenEnds(t *testing.T) {
	texts := map[string]string{
		"prose":      "Rivers usually begin in hills or mountains and widen as they approach the sea.",
		"multibyte":  "naïve café — 東京タワー 🎉🎉 done",
		"code":       "func f(x int) int {\n\treturn x*2 // twice\n}\n",
		"empty":      "",
		"one letter": "a",
	}
	for name, s := range longRuns {
		texts["long run "+name] = s
	}
	for _, enc := range tokens.Encodings() {
		c := mustCounter(t, enc)
		for name, s := range texts {
			ends := c.TokenEnds(s)
			if len(ends) != c.Count(s) {
				t.Errorf("%s %s: %d ends, Count %d", enc, name, len(ends), c.Count(s))
				continue
			}
			for k := 1; k < len(ends); k++ {
				if ends[k] <= ends[k-1] {
					t.Errorf("%s %s: ends not rising at %d: %v", enc, name, k, ends[k-1:k+1])
					break
				}
			}
			if len(ends) > 0 && ends[len(ends)-1] != len(s) {
				t.Errorf("%s %s: last end %d, text is %d bytes", enc, name, ends[len(ends)-1], len(s))
			}
		}
	}
}
