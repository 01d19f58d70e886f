package constraints_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/annotator/annotatortest"
	"github.com/ac3/ac3/stages/constraints"
)

// The shipped conversations the two forms are compared on: every text input
// under fixtures/ that holds real or realistic multi-turn conversations,
// and the labelled sets' examples (which hold most of the constraints).
var formFixtures = []string{
	"../../fixtures/wildchat/wildchat-1m-sample50.jsonl",
	"../../fixtures/wildchat/wildchat-1m-sample10.jsonl",
	"../../fixtures/lic/sample_5_per_task.json",
	"../../fixtures/formats/canonical.jsonl",
	"../../fixtures/formats/openai.jsonl",
	"../../fixtures/formats/sharegpt.jsonl",
}

var formLabelled = []string{
	"../../fixtures/labelled/constraints.jsonl",
	"../../fixtures/labelled/classify.jsonl",
	"../../fixtures/labelled/classify-wildchat.jsonl",
}

// TestFormsOnFixtures runs both forms of the llm variant over the shipped
// fixtures against one deterministic scripted model and counts the user
// turns whose registry differs. The model is the rule-based extractor
// answering either prompt the way the prompt asks:
//
//   - sequential: the constraints Heuristic.Find sees in u_t, less those
//     already in the registry the prompt shows (by Duplicate);
//   - parallel: the same constraints, each related to the latest earlier
//     user turn k the prompt shows where Find sees a constraint that is its
//     Duplicate (repeats: k) or has its type and shares at least half its
//     words (a changed instruction: revises: k).
//
// So the two forms see the same findings, and every difference comes from
// the form: a revision replaces in parallel and adds in sequential; a
// repeat of a revised-away constraint comes back in parallel; an earlier
// turn clipped or left out of the parallel prompt hides a repeat. The
// figures are in the README's constraints paragraph:
//
//	go test ./stages/constraints -run TestFormsOnFixtures -v
func TestFormsOnFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every fixture")
	}
	// Hundreds of calls under -race on a busy machine: the bounds are
	// for a hang, not for speed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	convs := fixtureConversations(t)
	regs, marks := runForms(ctx, t, convs)
	turns, setting, withAny, differ, convsDiffer := 0, 0, 0, 0, map[string]bool{}
	for _, c := range convs {
		for turn := 1; turn <= c.UserTurns(); turn++ {
			k := fmt.Sprint(c.ID, "/", turn)
			seq, par := regs[constraints.RegistrySequential][k], regs[constraints.RegistryParallel][k]
			turns++
			if len(seq) > len(regs[constraints.RegistrySequential][fmt.Sprint(c.ID, "/", turn-1)]) {
				setting++
			}
			if len(seq)+len(par) > 0 {
				withAny++
			}
			if !sameRegistry(seq, par) {
				differ++
				convsDiffer[c.ID] = true
				t.Logf("%s: sequential %q, parallel %q", k, textsOf(seq), textsOf(par))
			}
		}
	}
	t.Logf("%d conversations, %d user turns, %d of them setting a constraint; %d turns with a non-empty registry in either form; registries differ at %d turns (%.1f%% of all, %.1f%% of non-empty) in %d conversations; the parallel answers marked %d repeats and %d revisions",
		len(convs), turns, setting, withAny, differ, 100*float64(differ)/float64(turns), 100*float64(differ)/float64(max(withAny, 1)), len(convsDiffer), marks.repeats.Load(), marks.revises.Load())
	// The README quotes these; a change here is a change there.
	if got, want := [5]int{len(convs), turns, setting, withAny, differ}, [5]int{formsConvs, formsTurns, formsSetting, formsWithAny, formsDiffer}; got != want {
		t.Errorf("conversations, turns, setting, non-empty, differing = %v; the README says %v", got, want)
	}
}

// The measurement sees the forms part where they should: turn 2 changes
// turn 1's language and turn 3 changes it back. The sequential registry
// keeps both languages from turn 2 on; the parallel one only the one in
// force.
func TestFormsPartOnARevision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := &conv.Conversation{ID: "rev", Messages: []conv.Message{
		userMsg("From now on, answer in French. What is a verb?"), {Role: conv.Assistant, Content: "Un verbe..."},
		userMsg("From now on, answer in English. What is a noun?"), {Role: conv.Assistant, Content: "A noun..."},
		userMsg("From now on, answer in French. What is an adverb?"),
	}}
	regs, marks := runForms(ctx, t, []*conv.Conversation{c})
	want := map[string][2][]string{ // sequential, parallel
		"rev/1": {{"Answer in French."}, {"Answer in French."}},
		"rev/2": {{"Answer in French.", "Answer in English."}, {"Answer in English."}},
		"rev/3": {{"Answer in French.", "Answer in English."}, {"Answer in French."}},
	}
	for k, w := range want {
		seq, par := textsOf(regs[constraints.RegistrySequential][k]), textsOf(regs[constraints.RegistryParallel][k])
		if strings.Join(seq, "|") != strings.Join(w[0], "|") || strings.Join(par, "|") != strings.Join(w[1], "|") {
			t.Errorf("%s: sequential %q, parallel %q; want %q, %q", k, seq, par, w[0], w[1])
		}
	}
	if marks.repeats.Load() != 0 || marks.revises.Load() != 2 {
		t.Errorf("%d repeats, %d revisions marked; want 0, 2", marks.repeats.Load(), marks.revises.Load())
	}
}

// runForms runs both forms over convs against the heuristic-backed
// scripted model and returns each form's registry by "conversation/turn",
// and the relations the script marked.
func runForms(ctx context.Context, t *testing.T, convs []*conv.Conversation) (map[string]map[string][]constraints.Constraint, *scriptMarks) {
	t.Helper()
	srv := llmtest.New(t, llmtest.Options{})
	marks := &scriptMarks{}
	srv.Add(llmtest.Rule{Func: heuristicModel(constraints.NewHeuristic(), marks)})
	regs := map[string]map[string][]constraints.Constraint{}
	for _, form := range constraints.Registries() {
		l := annotatortest.Ledger(t, convs...)
		client, err := llm.New(llm.Options{
			Endpoints: []llm.Endpoint{{Name: "test", BaseURL: srv.URL, APIKey: "k", Model: "test-model", Timeout: time.Minute, MaxAttempts: 1}},
			Cache:     llm.NewMemCache(),
		})
		if err != nil {
			t.Fatal(err)
		}
		st, err := constraints.NewStage(constraints.Options{LLM: &constraints.LLM{Client: client}, Registry: form})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := pipeline.Run(ctx, l, st, pipeline.Options{})
		if err != nil || sum.Failed != 0 {
			t.Fatalf("%s: %+v, %v", form, sum, err)
		}
		regs[form] = map[string][]constraints.Constraint{}
		for _, c := range convs {
			units, err := l.ConversationUnits(ctx, constraints.StageName, c.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range units {
				rec, err := constraints.Decode(u.Output)
				if err != nil {
					t.Fatal(err)
				}
				regs[form][fmt.Sprint(c.ID, "/", u.Turn)] = rec.Registry
			}
		}
	}
	return regs, marks
}

// The figures TestFormsOnFixtures measured, quoted in the README.
const (
	formsConvs   = 224
	formsTurns   = 801
	formsSetting = 38
	formsWithAny = 94
	formsDiffer  = 0
)

func sameRegistry(a, b []constraints.Constraint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Text != b[i].Text || a[i].Type != b[i].Type || a[i].Turn != b[i].Turn {
			return false
		}
	}
	return true
}

// fixtureConversations reads formFixtures and formLabelled, keeping the
// first conversation of each ID.
func fixtureConversations(t *testing.T) []*conv.Conversation {
	t.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	var out []*conv.Conversation
	add := func(c *conv.Conversation) {
		if c == nil || c.UserTurns() == 0 || seen[c.ID] {
			return
		}
		seen[c.ID] = true
		out = append(out, c)
	}
	for _, path := range formFixtures {
		r, _, err := detect.Open(ctx, path, detect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("reading %s: %v", path, err)
			}
			add(rec.Conv)
		}
		r.Close()
	}
	for _, path := range formLabelled {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e struct {
				ID       string         `json:"id"`
				Messages []conv.Message `json:"messages"`
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			add(&conv.Conversation{ID: "labelled:" + e.ID, Messages: e.Messages})
		}
	}
	return out
}

var (
	userRE     = regexp.MustCompile(`(?s)<user_message id="[0-9a-f]+">\n(.*)\n</user_message>`)
	registryRE = regexp.MustCompile(`(?m)^\d+\. (.*) \(\w+, set at turn \d+\)$`)
	earlierRE  = regexp.MustCompile(`(?m)^\[turn (\d+)\] (.*)$`)
)

// scriptMarks counts the relations heuristicModel gave parallel answers.
type scriptMarks struct{ repeats, revises atomic.Int64 }

// heuristicModel is the scripted model of TestFormsOnFixtures.
func heuristicModel(h *constraints.Heuristic, marks *scriptMarks) func(llmtest.ChatRequest) llmtest.Reply {
	return func(r llmtest.ChatRequest) llmtest.Reply {
		last := r.Last()
		m := userRE.FindStringSubmatch(last)
		if m == nil {
			return llmtest.Reply{Content: "the script could not read this prompt"}
		}
		head := last[:strings.Index(last, m[0])]
		type item struct {
			Text     string `json:"text"`
			Evidence string `json:"evidence"`
			Type     string `json:"type"`
			Repeats  int    `json:"repeats,omitempty"`
			Revises  int    `json:"revises,omitempty"`
		}
		items := []item{}
		parallel := strings.Contains(head, "<earlier_user_messages")
		var earlier []constraints.Constraint
		if parallel {
			for _, e := range earlierRE.FindAllStringSubmatch(head, -1) {
				k, _ := strconv.Atoi(e[1])
				for _, c := range h.Find(e[2]) {
					c.Turn = k
					earlier = append(earlier, c)
				}
			}
		}
	next:
		for _, c := range h.Find(m[1]) {
			it := item{Text: c.Text, Evidence: c.Evidence, Type: c.Type}
			if !parallel {
				for _, rm := range registryRE.FindAllStringSubmatch(head, -1) {
					if constraints.Duplicate(rm[1], c.Text) {
						continue next
					}
				}
			}
			// The latest earlier turn that bears on it decides.
			for _, e := range earlier {
				switch {
				case constraints.Duplicate(e.Text, c.Text):
					it.Repeats, it.Revises = e.Turn, 0
				case e.Type == c.Type && shared(e.Text, c.Text) >= 0.5:
					it.Repeats, it.Revises = 0, e.Turn
				}
			}
			if it.Repeats > 0 {
				marks.repeats.Add(1)
			}
			if it.Revises > 0 {
				marks.revises.Add(1)
			}
			items = append(items, it)
		}
		body, _ := json.Marshal(map[string]any{"constraints": items})
		return llmtest.Reply{Content: annotatortest.Answer(annotatortest.NonceOf(r), string(body))}
	}
}

// shared is the share of distinct words two sentences have in common.
func shared(a, b string) float64 {
	wa, wb := map[string]bool{}, map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(a)) {
		wa[strings.Trim(w, ".,;:!?\"'")] = true
	}
	for _, w := range strings.Fields(strings.ToLower(b)) {
		wb[strings.Trim(w, ".,;:!?\"'")] = true
	}
	inter := 0
	for w := range wb {
		if wa[w] {
			inter++
		}
	}
	if u := len(wa) + len(wb) - inter; u > 0 {
		return float64(inter) / float64(u)
	}
	return 0
}
