package curate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate"
)

// synthText writes about n characters that look like chat traffic: prose
// with the odd list, number and code block.
func synthText(r *rand.Rand, n int) string {
	words := strings.Fields("the a to of and in is it for that you this with on be can as are use your if " +
		"function value data file error example code table user model list return string number server " +
		"python javascript request response query column database performance memory output input " +
		"however therefore because which should would could please explain write create update delete")
	code := []string{
		"def handler(event, context):\n    items = event.get(\"items\", [])\n    return {\"count\": len(items)}\n",
		"const total = rows.reduce((acc, r) => acc + r.price * r.qty, 0);\nconsole.log(total.toFixed(2));\n",
		"SELECT id, name, COUNT(*) AS n FROM orders GROUP BY id, name HAVING n > 3 ORDER BY n DESC;\n",
		"for i := 0; i < len(xs); i++ {\n\tif xs[i] > max {\n\t\tmax = xs[i]\n\t}\n}\n",
	}
	var b strings.Builder
	for b.Len() < n {
		switch r.IntN(12) {
		case 0:
			b.WriteString("\n\n```\n" + code[r.IntN(len(code))] + "```\n\n")
		case 1:
			fmt.Fprintf(&b, "\n%d. ", r.IntN(9)+1)
		case 2:
			fmt.Fprintf(&b, " %d.%d ", r.IntN(5000), r.IntN(100))
		default:
			for range 6 + r.IntN(10) {
				w := words[r.IntN(len(words))]
				if r.IntN(8) == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				b.WriteString(w + " ")
			}
			b.WriteString(". ")
		}
	}
	return b.String()
}

// synthConversations makes WildChat-like conversations: 5–10 rounds, user
// messages of 200–1,500 characters and replies of 500–3,000.
func synthConversations(n int) []*conv.Conversation {
	r := rand.New(rand.NewPCG(7, 11))
	out := make([]*conv.Conversation, n)
	for k := range out {
		c := &conv.Conversation{ID: fmt.Sprintf("bench-%d", k)}
		if k%5 == 0 {
			c.System = "You are a helpful assistant."
		}
		for range 5 + r.IntN(6) {
			c.Messages = append(c.Messages,
				conv.Message{Role: conv.User, Content: synthText(r, 200+r.IntN(1300))},
				conv.Message{Role: conv.Assistant, Content: synthText(r, 500+r.IntN(2500))})
		}
		out[k] = c
	}
	return out
}

// neededText is what curating any turn needs tokenized: the system message
// and every message up to the last user message (the final reply is never
// part of a context).
func neededText(c *conv.Conversation) []string {
	turns := c.Turns()
	last := turns[len(turns)-1].User
	texts := []string{c.System}
	for _, m := range c.Messages[:last+1] {
		texts = append(texts, m.Content)
	}
	return texts
}

func benchInputTokens(b *testing.B, convs []*conv.Conversation) int {
	n := 0
	for _, c := range convs {
		for _, s := range neededText(c) {
			n += counter(b).Count(s)
		}
	}
	return n
}

// BenchmarkCurate curates fc, ao, lt and de for every turn from 2 with token
// totals, the way a run does (one cache per conversation, shared by the
// strategies). tok/s counts input tokens, so it compares directly with
// BenchmarkTokenizerAlone.
func BenchmarkCurate(b *testing.B) {
	convs := synthConversations(50)
	input := benchInputTokens(b, convs)
	ss, err := curate.Resolve("fc,ao,lt,de", curate.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cnt := counter(b)
	ctx := context.Background()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		for _, c := range convs {
			tc := curate.NewWorkspace(c, cnt)
			for _, s := range ss {
				if _, err := s.Contexts(ctx, c, curate.DefaultFrom, tc); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	reportRates(b, input, cpu0)
}

// BenchmarkStageFiller curates the filler diagnostic through the stage, as a
// run does, so filler cuts are counted from the stage's per-word table; the
// PerConversationCache variant gives each conversation a bare workspace,
// which tokenizes the cuts (the path before the table).
func BenchmarkStageFiller(b *testing.B) {
	convs := synthConversations(50)
	input := benchInputTokens(b, convs)
	ss, err := curate.Resolve("filler", curate.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cnt := counter(b)
	ctx := context.Background()
	b.Run("stage", func(b *testing.B) {
		st := curate.NewStage(ss, cnt, curate.DefaultFrom)
		cpu0 := cpuTime()
		for b.Loop() {
			for _, c := range convs {
				if _, err := st.Process(ctx, pipeline.Task{Conv: c, Variants: st.Variants()}); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportRates(b, input, cpu0)
	})
	b.Run("PerConversationCache", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			for _, c := range convs {
				if _, err := ss[0].Contexts(ctx, c, curate.DefaultFrom, curate.NewWorkspace(c, cnt)); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportRates(b, input, cpu0)
	})
}

// BenchmarkTokenizerAlone tokenizes the same text once, the floor any
// curation with exact token counts has to pay.
func BenchmarkTokenizerAlone(b *testing.B) {
	convs := synthConversations(50)
	input := benchInputTokens(b, convs)
	cnt := counter(b)
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		for _, c := range convs {
			for _, s := range neededText(c) {
				cnt.Count(s)
			}
		}
	}
	reportRates(b, input, cpu0)
}

// reportRates reports input tokens per wall second (tok/s) and, where the
// platform tells, per CPU second (tok/cpu-s), which is steadier on a busy
// machine.
func reportRates(b *testing.B, input int, cpu0 time.Duration) {
	total := float64(input) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "tok/s")
	if cpu := cpuTime() - cpu0; cpu0 > 0 && cpu > 0 {
		b.ReportMetric(total/cpu.Seconds(), "tok/cpu-s")
	}
}
