package curate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
)

// onlineConvs are conversations of different lengths, each user message
// naming its conversation ("convN asks t"), so a request shows whose it is.
func onlineConvs() []*conv.Conversation {
	var out []*conv.Conversation
	for i, turns := range []int{3, 2, 4, 3} {
		id := fmt.Sprintf("conv%d", i+1)
		var rc []string
		for t := 1; t <= turns; t++ {
			rc = append(rc, "user", fmt.Sprintf("%s asks %d", id, t), "assistant", fmt.Sprintf("%s answers %d", id, t))
		}
		out = append(out, build(id, "Be exact.", rc...))
	}
	return out
}

// onlineRun is a run file holding onlineConvs.
func onlineRun(t *testing.T) (*ledger.Ledger, []int64) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	in, err := l.AddInput(ctx, ledger.Input{Path: "/in", Format: "canonical"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: onlineConvs()}); err != nil {
		t.Fatal(err)
	}
	page, err := l.ConversationPage(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, sc := range page {
		seqs = append(seqs, sc.Seq)
	}
	return l, seqs
}

// memoryServer answers reflection and unify with texts derived from the
// request alone, so two runs agree exactly when they send the same requests
// in the same order. Each cheatsheet is "SHEET-<hash of the unify request>"
// followed by pad words.
func memoryServer(t *testing.T, pad int, sc analyzetest.Script) *llmtest.Server {
	srv := llmtest.New(t, llmtest.Options{})
	srv.Add(llmtest.Rule{
		Name: "memory",
		Match: func(r llmtest.ChatRequest) bool {
			k := analyzetest.Kind(r)
			return k == analyzetest.KindReflect || k == analyzetest.KindUnify
		},
		Func: func(r llmtest.ChatRequest) llmtest.Reply {
			sum := sha256.Sum256([]byte(r.Last()))
			id := hex.EncodeToString(sum[:4])
			n := analyzetest.Nonce(r)
			if analyzetest.Kind(r) == analyzetest.KindReflect {
				return llmtest.Reply{Content: fmt.Sprintf("<takeaways id=%q>\n- lesson %s\n</takeaways>", n, id)}
			}
			return llmtest.Reply{Content: fmt.Sprintf("<cheatsheet id=%q>\nSHEET-%s%s\n</cheatsheet>", n, id, strings.Repeat(" pad", pad))}
		},
	})
	analyzetest.Install(srv, sc)
	return srv
}

// onlineStage builds fc, gated-reset and augment with the online memory
// over l, with a client whose cache is the run's.
func onlineStage(t *testing.T, srv *llmtest.Server, l *ledger.Ledger) *curate.OnlineStage {
	t.Helper()
	an, err := analyze.New(analyzetest.Client(t, srv, l.LLMCache()), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := memory.NewOnline(an, l, curate.DefaultFrom)
	opts := curate.Options{Analyzer: an, Gates: map[string]curate.Gate{curated.OpAugment: {Floor: 1}}}
	var sts []curate.Strategy
	for _, name := range []string{"fc", "gated-reset", "augment"} {
		st, err := curate.OnlineByName(name, opts, m)
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	return curate.NewOnlineStage(sts, counter(t), m)
}

// crashAfter stops the run right after seq's conversation was curated and
// its memory step stored, before the engine commits its units: what a kill
// at that moment leaves behind.
type crashAfter struct {
	*curate.OnlineStage
	seq int64
}

var errCrash = errors.New("simulated crash")

func (s crashAfter) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	rest, err := s.Chain(ctx, t)
	if err != nil {
		return nil, err
	}
	return rest(ctx)
}

// Chain is where the engine enters the stage (it is a ChainStage), so the
// crash goes there. The engine may move the chain on while a conversation
// is curated; the chain is held at seq so that, as in a process killed at
// that moment, no later step has started.
func (s crashAfter) Chain(ctx context.Context, t pipeline.Task) (func(context.Context) ([]pipeline.Result, error), error) {
	if t.Seq > s.seq {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	rest, err := s.OnlineStage.Chain(ctx, t)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]pipeline.Result, error) {
		res, err := rest(ctx)
		if err == nil && t.Seq == s.seq {
			return nil, errCrash
		}
		return res, err
	}, nil
}

func runStage(t *testing.T, l *ledger.Ledger, st pipeline.Stage) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := pipeline.Run(ctx, l, st, pipeline.Options{Workers: 1, BatchWait: 10 * time.Millisecond})
	return err
}

// chainOf reads the stored step of every conversation and the text after it.
func chainOf(t *testing.T, l *ledger.Ledger, chain string, seqs []int64) ([]memory.OnlineStep, []string) {
	t.Helper()
	ctx := context.Background()
	var steps []memory.OnlineStep
	var texts []string
	for _, s := range seqs {
		st, ok, err := memory.OnlineStepAt(ctx, l, chain, s)
		if err != nil || !ok {
			t.Fatalf("no memory step at seq %d: %v", s, err)
		}
		text, err := memory.OnlineCheatsheet(ctx, l, chain, st.After)
		if err != nil {
			t.Fatal(err)
		}
		st.Usage = analyze.Usage{} // cached calls are free; the content is what must agree
		steps = append(steps, st)
		texts = append(texts, text)
	}
	return steps, texts
}

// curatedContexts reads every curated context, keyed by unit key, with the usage
// (which counts cache hits) cleared.
func curatedContexts(t *testing.T, l *ledger.Ledger, st pipeline.Stage) map[string]curated.Context {
	t.Helper()
	var vs []ledger.Variant
	for _, v := range st.Variants() {
		vs = append(vs, ledger.Variant(v))
	}
	out := map[string]curated.Context{}
	err := l.Units(context.Background(), curate.StageName, vs, 0, 1<<62, func(u ledger.Unit) error {
		if u.Status != ledger.Done {
			return fmt.Errorf("unit %s turn %d %s: %s", u.ConvID, u.Turn, u.Variant, u.Error)
		}
		x, err := curated.DecodeContext(u.Output)
		if err != nil {
			return err
		}
		x.Info.AnalysisUsage, x.Info.OperatorUsage = analyze.Usage{}, analyze.Usage{}
		out[u.Key] = x
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func bodies(srv *llmtest.Server) []string {
	var out []string
	for _, c := range srv.Calls() {
		if c.Status == 200 {
			out = append(out, string(c.Body))
		}
	}
	slices.Sort(out)
	return out
}

func TestOnlineMemoryIsDeterministicAcrossAnInterruptedRun(t *testing.T) {
	script := analyzetest.Script{Issues: issuesAt(3)}

	// Run A: straight through.
	la, seqs := onlineRun(t)
	srvA := memoryServer(t, 0, script)
	stA := onlineStage(t, srvA, la)
	for _, v := range stA.Variants() {
		if v.Name != "fc" && !strings.Contains(v.Version, "memory=online:"+stA.Memory().Chain().ID) {
			t.Errorf("%s version does not say online: %s", v.Name, v.Version)
		}
	}
	if err := runStage(t, la, stA); err != nil {
		t.Fatal(err)
	}
	chain := stA.Memory().Chain().ID
	stepsA, textsA := chainOf(t, la, chain, seqs)
	// Each reflection saw its conversation's trajectory: the messages, the
	// analyses and the decision at each turn (EDIT where the analysis found
	// issues, turn 3 here), with no outcome yet.
	reflects, edits := 0, 0
	for _, c := range srvA.Calls() {
		if analyzetest.Kind(c.Request) != analyzetest.KindReflect {
			continue
		}
		reflects++
		last := c.Request.Last()
		for _, want := range []string{"<user_message>", "<assistant_reply>", "<turn t=\"2\">", "Decision: NO EDIT", "not judged yet"} {
			if !strings.Contains(last, want) {
				t.Errorf("an online reflection lacks %q:\n%s", want, last)
				break
			}
		}
		if strings.Contains(last, "<turn t=\"3\">") {
			edits++
			if !strings.Contains(last, "problem at turn 3\n</review>\nDecision: EDIT") {
				t.Errorf("turn 3 found issues but the reflection does not show an EDIT there:\n%s", last)
			}
		}
	}
	if reflects != len(seqs) || edits == 0 {
		t.Errorf("%d reflections for %d conversations, %d with turn 3", reflects, len(seqs), edits)
	}

	// Run B: killed after the second conversation's memory step was stored
	// but before its units were committed, then resumed by a new process.
	lb, _ := onlineRun(t)
	srvB := memoryServer(t, 0, script)
	err := runStage(t, lb, crashAfter{onlineStage(t, srvB, lb), seqs[1]})
	if !errors.Is(err, errCrash) {
		t.Fatalf("interrupted run: %v", err)
	}
	if _, ok, _ := memory.OnlineStepAt(context.Background(), lb, chain, seqs[2]); ok {
		t.Fatal("the interrupted run went past the second conversation")
	}
	stB := onlineStage(t, srvB, lb)
	if err := runStage(t, lb, stB); err != nil {
		t.Fatal(err)
	}
	stepsB, textsB := chainOf(t, lb, chain, seqs)

	if !reflect.DeepEqual(stepsA, stepsB) || !reflect.DeepEqual(textsA, textsB) {
		t.Errorf("cheatsheet versions differ:\nA %+v\n  %q\nB %+v\n  %q", stepsA, textsA, stepsB, textsB)
	}
	for i, st := range stepsA {
		if st.Skipped != "" || st.After == "" || (i > 0 && st.Prev != seqs[i-1]) || (i > 0 && st.Before != stepsA[i-1].After) {
			t.Errorf("step %d: %+v", i, st)
		}
	}
	if a, b := curatedContexts(t, la, stA), curatedContexts(t, lb, stB); len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("curated outputs differ between the straight and the resumed run (%d vs %d units)", len(a), len(b))
	}
	// The resumed run repeated no answered request, and both runs sent
	// exactly the same requests.
	bb := bodies(srvB)
	if len(slices.Compact(slices.Clone(bb))) != len(bb) {
		t.Error("the resumed run sent a request the interrupted run had already been answered")
	}
	if ba := bodies(srvA); !slices.Equal(ba, bb) {
		t.Errorf("the runs sent different requests: %d vs %d", len(ba), len(bb))
	}

	// Conversation k's step 2 was given the cheatsheet built from
	// conversations before k, never one built from k or later.
	checked := 0
	for _, c := range srvA.Calls() {
		if analyzetest.Kind(c.Request) != analyzetest.KindEvaluate {
			continue
		}
		last := c.Request.Last()
		k := -1
		for i := range seqs {
			if strings.Contains(last, fmt.Sprintf("conv%d asks 1", i+1)) {
				k = i
			}
		}
		if k < 0 {
			t.Fatalf("evaluate request of no known conversation:\n%s", last)
		}
		for j, text := range textsA {
			has := strings.Contains(last, text)
			if want := j == k-1; has != want {
				t.Errorf("conversation %d's step 2: contains the cheatsheet after conversation %d = %v, want %v", k+1, j+1, has, want)
			}
		}
		if k == 0 && strings.Contains(last, "SHEET-") {
			t.Error("the first conversation's step 2 was given a cheatsheet")
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no evaluate request recorded")
	}

	// Every curated context says which cheatsheet it was given.
	for _, x := range curatedContexts(t, la, stA) {
		if x.Strategy != "fc" && !strings.HasPrefix(x.Info.Memory, "online:") {
			t.Errorf("%s turn %d: memory label %q", x.Strategy, x.Turn, x.Info.Memory)
		}
	}
}

func TestOnlineMemoryCapsTheCheatsheet(t *testing.T) {
	l, seqs := onlineRun(t)
	srv := memoryServer(t, 2000, analyzetest.Script{})
	st := onlineStage(t, srv, l)
	if err := runStage(t, l, st); err != nil {
		t.Fatal(err)
	}
	steps, texts := chainOf(t, l, st.Memory().Chain().ID, seqs)
	for i, text := range texts {
		if n := len(strings.Fields(text)); n != analyze.MaxCheatsheetWords || steps[i].Words != n {
			t.Errorf("cheatsheet after conversation %d has %d words (recorded %d), want the cap %d", i+1, n, steps[i].Words, analyze.MaxCheatsheetWords)
		}
	}
	// Step 2 of the second conversation got the capped text and nothing of
	// what the model wrote past the cap.
	for _, c := range srv.Calls() {
		last := c.Request.Last()
		if analyzetest.Kind(c.Request) != analyzetest.KindEvaluate || !strings.Contains(last, "conv2 asks 1") {
			continue
		}
		_, rest, ok := strings.Cut(last, texts[0])
		if !ok {
			t.Fatal("conversation 2's step 2 lacks the first cheatsheet")
		}
		if strings.HasPrefix(rest, " pad") {
			t.Error("step 2 received the cheatsheet beyond the cap")
		}
	}
}

// mapStore is an in-memory MetaStore.
type mapStore struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *mapStore) Meta(_ context.Context, k string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok, nil
}

func (s *mapStore) SetMeta(_ context.Context, k, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[k] = v
	return nil
}

func TestOnlineMemorySkipsAnUnreadableConversationAndRefusesDisorder(t *testing.T) {
	srv := memoryServer(t, 0, analyzetest.Script{Wrap: func(kind, ans string) string {
		if kind == analyzetest.KindSpec && strings.Contains(ans, "turn 4") {
			return "no tags"
		}
		return ans
	}})
	an, err := analyze.New(analyzetest.Client(t, srv, nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := &mapStore{}
	m := memory.NewOnline(an, store, 2)
	st, err := curate.OnlineByName("reset", curate.Options{Analyzer: an}, m)
	if err != nil {
		t.Fatal(err)
	}
	stage := curate.NewOnlineStage([]curate.Strategy{st}, counter(t), m)
	ctx := context.Background()
	convs := onlineConvs()
	for i, c := range convs {
		res, err := stage.Process(ctx, pipeline.Task{Seq: int64(i + 1), Conv: c, Variants: stage.Variants()})
		if err != nil {
			t.Fatal(err)
		}
		failed := slices.ContainsFunc(res[0].Units, func(u pipeline.Unit) bool { return u.Failed })
		if failed != (c.ID == "conv3") {
			t.Errorf("%s: failed unit = %v", c.ID, failed)
		}
	}
	chain := m.Chain().ID
	s2, _, _ := memory.OnlineStepAt(ctx, store, chain, 2)
	s3, _, _ := memory.OnlineStepAt(ctx, store, chain, 3)
	s4, _, _ := memory.OnlineStepAt(ctx, store, chain, 4)
	if s3.Skipped == "" || s3.After != s2.After || s4.Before != s2.After {
		t.Errorf("the unreadable conversation changed the chain: %+v / %+v / %+v", s2, s3, s4)
	}
	// A conversation before the head that was never learned from means the
	// order was broken: refuse rather than learn out of order.
	m2 := memory.NewOnline(an, store, 2)
	if _, err := m2.Before(ctx, 3, convs[0], nil); err != nil {
		t.Errorf("a stored step is not reused: %v", err)
	}
	if _, err := m2.Before(ctx, 1, convs[0], nil); err != nil {
		t.Errorf("an earlier stored step is not reused: %v", err)
	}
	fresh := memory.NewOnline(an, &mapStore{}, 2)
	if _, err := fresh.Before(ctx, 5, convs[1], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Before(ctx, 4, convs[0], nil); err == nil || !strings.Contains(err.Error(), "ingest order") {
		t.Errorf("out-of-order conversation: %v", err)
	}
	// An online operator outside an OnlineStage says what is missing.
	if _, err := st.Contexts(ctx, convs[0], 2, curate.NewWorkspace(convs[0], counter(t))); err == nil {
		t.Error("an online operator ran without its memory")
	}
}

// The chain's own default first turn (package memory cannot import curate)
// must stay curate's.
func TestOnlineMemoryDefaultsToTheStagesFirstTurn(t *testing.T) {
	an, err := analyze.New(analyzetest.Client(t, memoryServer(t, 0, analyzetest.Script{}), nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := memory.NewOnline(an, nil, 0)
	if m.From() != curate.DefaultFrom {
		t.Errorf("online memory with from 0 starts at turn %d, curate.DefaultFrom is %d", m.From(), curate.DefaultFrom)
	}
}

// Decisions name the operator and gate as memory learning has always keyed
// its cheatsheet, and make Decider's decisions afresh per conversation.
func TestDecisionsNameTheOperatorAndGate(t *testing.T) {
	d := curate.Decisions(curated.OpGatedReset, curate.DefaultGate(curated.OpGatedReset))
	if d.Name != "gated-reset floor=2 cap=3" {
		t.Errorf("decisions named %q", d.Name)
	}
	issues := analyze.TurnAnalysis{Turn: 3, Analysis: analyze.Analysis{Issues: "drifted"}}
	first, second := d.New(), d.New()
	for range 3 {
		if !first(issues) {
			t.Fatal("gated-reset did not edit under its cap")
		}
	}
	if first(issues) || !second(issues) {
		t.Error("the cap is not per conversation")
	}
}
