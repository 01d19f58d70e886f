// Package analyzetest scripts the AC3 analyzer's calls on an in-process
// test endpoint (pipeline/llm/llmtest), for tests of the analyzer, the
// curation operators and the commands that run them. It is for tests only.
package analyzetest

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// Script decides the answers. Turn-keyed functions receive t, the number of
// user messages the request shows. Nil functions give fixed defaults:
// "spec of turn t", "aligned work of turn t", "None", "briefing of turn t",
// "summary: <first words of the reply>".
type Script struct {
	Spec    func(t int) string
	Aligned func(t int) string
	Issues  func(t int) string
	Rewrite func(t int) string
	Summary func(reply string) string
	// Takeaways and Cheatsheet answer the memory's reflection and unify
	// calls; Cheatsheet gets the number of unify calls so far (1-based).
	Takeaways  func(n int) string
	Cheatsheet func(n int) string
	// Wrap, when set, rewrites every answer before it is sent (to inject a
	// malformed or spoofed answer).
	Wrap func(kind, answer string) string
}

// Kinds of call, as Script.Wrap receives them.
const (
	KindSpec       = "spec"
	KindContagious = "spec-ablation"
	KindEvaluate   = "evaluate"
	KindSingle     = "single-pass"
	KindRewrite    = "rewrite"
	// KindRewritePaper is the rewrite call with the paper variant's prompt
	// (analyze.RewritePaper); Script.Rewrite answers both.
	KindRewritePaper = "rewrite-paper"
	// KindRewriteEarlier is the rewrite call with the earlier variant's
	// prompt (analyze.RewriteEarlier); Script.Rewrite gives its task
	// specification, and the verified work is "None".
	KindRewriteEarlier = "rewrite-earlier"
	KindSummary        = "summary"
	KindReflect        = "reflect"
	KindUnify          = "unify"
)

// Kind tells which analyzer call a request is, from its system message ("" for
// other requests).
func Kind(req llmtest.ChatRequest) string {
	sys := req.System()
	switch {
	case strings.Contains(sys, "into a precise task specification. You only ever see"):
		return KindSpec
	case strings.Contains(sys, "You turn the conversation into a precise task specification"):
		return KindContagious
	case strings.Contains(sys, "You review an assistant's work"):
		return KindEvaluate
	case strings.Contains(sys, "You review a conversation between a user and an assistant"):
		return KindSingle
	case strings.Contains(sys, "You prepare the context an assistant will read"):
		return KindRewrite
	case strings.Contains(sys, "You write the one message that will stand in for a conversation's history"):
		return KindRewritePaper
	case strings.Contains(sys, "You prepare a compacted context for an AI assistant"):
		return KindRewriteEarlier
	case strings.Contains(sys, "You summarise one reply"):
		return KindSummary
	case strings.Contains(sys, "You help a reviewer"):
		return KindReflect
	case strings.Contains(sys, "You maintain a reviewer's notes"):
		return KindUnify
	}
	return ""
}

var nonceRE = regexp.MustCompile(`<[a-z_]+ id="([0-9a-f]{12})">`)

// Nonce returns the tag id a request asks the answer to use.
func Nonce(req llmtest.ChatRequest) string {
	// The prompt shows the answer tags last; earlier matches may be text a
	// user pasted.
	ms := nonceRE.FindAllStringSubmatch(req.Last(), -1)
	if ms == nil {
		return ""
	}
	return ms[len(ms)-1][1]
}

// Turn is the number of user messages a request shows.
func Turn(req llmtest.ChatRequest) int {
	last := req.Last()
	if n := strings.Count(last, "<user_message n="); n > 0 && Kind(req) == KindSpec {
		return n
	}
	return strings.Count(last, `role="user"`)
}

// answer lays fields out as the request asks: one JSON object when it sent
// a schema (as an enforcing server would), else prefix and nonce-tagged
// sections.
func answer(r llmtest.ChatRequest, nonce, prefix string, fields []string) string {
	if _, ok := r.Schema(); ok {
		obj := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			obj[fields[i]] = fields[i+1]
		}
		b, _ := json.Marshal(obj)
		return string(b)
	}
	var secs []string
	for i := 0; i+1 < len(fields); i += 2 {
		secs = append(secs, tag(nonce, fields[i], fields[i+1]))
	}
	return prefix + strings.Join(secs, "\n")
}

func tag(nonce, name, body string) string {
	return "<" + name + ` id="` + nonce + `">` + "\n" + body + "\n</" + name + ">"
}

// Install adds a rule answering every analyzer call with sc's answers.
func Install(s *llmtest.Server, sc Script) {
	unify := 0
	reflect := 0
	s.Add(llmtest.Rule{
		Name:  "analyzer",
		Match: func(r llmtest.ChatRequest) bool { return Kind(r) != "" },
		Func: func(r llmtest.ChatRequest) llmtest.Reply {
			n, t, kind := Nonce(r), Turn(r), Kind(r)
			pick := func(f func(int) string, def string) string {
				if f != nil {
					return f(t)
				}
				return def
			}
			spec := pick(sc.Spec, "spec of turn "+strconv.Itoa(t))
			aligned := pick(sc.Aligned, "aligned work of turn "+strconv.Itoa(t))
			issues := pick(sc.Issues, "None")
			var (
				fields []string // name, text, name, text, …
				prefix string   // prose before the tagged sections
			)
			switch kind {
			case KindSpec, KindContagious:
				fields = []string{"spec", spec}
			case KindEvaluate:
				fields = []string{"aligned", aligned, "issues", issues}
			case KindSingle:
				fields = []string{"spec", spec, "aligned", aligned, "issues", issues}
			case KindRewrite:
				prefix = "Here is the briefing.\n"
				fields = []string{"context", pick(sc.Rewrite, "briefing of turn "+strconv.Itoa(t))}
			case KindRewritePaper:
				// The paper variant may reason in plain text before its section.
				prefix = "Thinking it over: keep what the notes call on track.\n\n"
				fields = []string{"context", pick(sc.Rewrite, "briefing of turn "+strconv.Itoa(t))}
			case KindRewriteEarlier:
				fields = []string{"task_spec", pick(sc.Rewrite, "1) briefing of turn "+strconv.Itoa(t)), "verified_work", "None"}
			case KindSummary:
				reply := between(r.Last(), "<assistant_reply>\n", "\n</assistant_reply>")
				sum := "summary: " + firstWords(reply, 4)
				if sc.Summary != nil {
					sum = sc.Summary(reply)
				}
				fields = []string{"summary", sum}
			case KindReflect:
				reflect++
				tk := "- takeaway " + strconv.Itoa(reflect)
				if sc.Takeaways != nil {
					tk = sc.Takeaways(reflect)
				}
				fields = []string{"takeaways", tk}
			case KindUnify:
				unify++
				cs := "cheatsheet version " + strconv.Itoa(unify)
				if sc.Cheatsheet != nil {
					cs = sc.Cheatsheet(unify)
				}
				fields = []string{"cheatsheet", cs}
			}
			ans := answer(r, n, prefix, fields)
			if sc.Wrap != nil {
				ans = sc.Wrap(kind, ans)
			}
			return llmtest.Reply{Content: ans}
		},
	})
}

// Client returns a client for s with an in-memory answer cache and the
// analyzer role bound to it; it asks for tagged answers.
func Client(tb testing.TB, s *llmtest.Server, cache llm.Cache) *llm.Client {
	tb.Helper()
	return OutputClient(tb, s, cache, parse.Tags)
}

// OutputClient is Client with the given output (parse.JSONSchema for
// structured output).
func OutputClient(tb testing.TB, s *llmtest.Server, cache llm.Cache, out parse.Output) *llm.Client {
	tb.Helper()
	if cache == nil {
		cache = llm.NewMemCache()
	}
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "test", BaseURL: s.URL, Model: "test-model", Limits: llm.Limits{Concurrency: 8},
			Price: llm.Price{Input: 1, Output: 2}, Output: out}},
		Roles: map[string]llm.RoleBinding{"analyzer": {Endpoint: "test"}},
		Cache: cache,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return s
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}
