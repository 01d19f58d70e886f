package modelstages_test

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

// The prompt cache on the analyzer's other calls (issue 33): the e2e config
// with the rewrite and sum strategies and the online memory added, and an
// analysis that finds issues at every odd turn past the first, so rewrites
// and resets happen. It prints the stage table of TestPromptCacheShares and
// the emulated cache's share per kind of analyzer call.

// opsConfig adds rewrite, sum and the online memory to the e2e config.
func opsConfig(text string) string {
	text = strings.Replace(text, "    strategies: [fc, ao, gated-reset]\n", "    strategies: [fc, ao, gated-reset, rewrite, sum]\n    memory: {regime: online}\n", 1)
	return strings.Replace(text, "respond: {strategies: [fc, ao, gated-reset]}", "respond: {strategies: [fc, ao, gated-reset, rewrite, sum]}", 1)
}

func opsScript() analyzetest.Script {
	return analyzetest.Script{Issues: func(t int) string {
		if t > 1 && t%2 == 1 {
			return "The last reply ignored the user's correction."
		}
		return "None"
	}}
}

// kindFigures is one kind of analyzer call: prompt bytes over 4 (the
// emulated server's token count) and the tokens its cache served.
type kindFigures struct {
	kind           string
	calls          int
	prompt, cached int
}

func analyzerKinds(calls []llmtest.Call) []kindFigures {
	rows := map[string]*kindFigures{}
	for _, c := range calls {
		k := analyzetest.Kind(c.Request)
		if k == "" || c.Fault != llmtest.NoFault {
			continue
		}
		r := rows[k]
		if r == nil {
			r = &kindFigures{kind: k}
			rows[k] = r
		}
		r.calls++
		for _, m := range c.Request.Messages {
			r.prompt += (len(m.Content) + len(m.Role) + 3) / 4
		}
		r.cached += c.Cached
	}
	var out []kindFigures
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b kindFigures) int { return strings.Compare(a.kind, b.kind) })
	return out
}

func printKinds(w io.Writer, rows []kindFigures) {
	tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "analyzer call\tcalls\tprompt tokens\tcached\tshare\t")
	for _, r := range rows {
		share := 0.0
		if r.prompt > 0 {
			share = float64(r.cached) / float64(r.prompt)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f%%\t\n", r.kind, r.calls, r.prompt, r.cached, 100*share)
	}
	tw.Flush()
}

// TestPromptCacheOperators runs the e2e config with rewrite, sum and the
// online memory and checks that the dry run expects some of the respond
// stage's input cached on every strategy's contexts, as the run gets.
func TestPromptCacheOperators(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the e2e config")
	}
	rows, _, calls := runCached(t, shortAnswers, "", opsScript(), opsConfig)
	var b strings.Builder
	printCacheTable(&b, rows)
	printKinds(&b, analyzerKinds(calls))
	t.Logf("\n%s", b.String())
	if r := figureOf(rows, "respond"); r.estimated == 0 || r.share() == 0 {
		t.Errorf("respond: the run's cache served %.1f%%, the dry run expected %.1f%%", 100*r.share(), 100*r.estimated)
	}
}

// BenchmarkPromptCacheOperators prints TestPromptCacheOperators' figures:
//
//	go test -run '^$' -bench '^BenchmarkPromptCacheOperators$' -benchtime 1x ./run/bench/modelstages/
func BenchmarkPromptCacheOperators(b *testing.B) {
	for b.Loop() {
		rows, _, calls := runCached(b, shortAnswers, os.Getenv("AC3_BENCH_CACHE_INPUT"), opsScript(), opsConfig)
		fmt.Printf("\nprompt cache on the e2e config with rewrite, sum and the online memory (issue 33)\n")
		printCacheTable(os.Stdout, rows)
		printKinds(os.Stdout, analyzerKinds(calls))
	}
}
