package curate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
)

// batchQueue is a Deferrer that keeps the requests of a pass, as the run
// file does, for answer to send them as one batch.
type batchQueue struct {
	mu   sync.Mutex
	reqs map[string]llm.DeferredRequest
}

func (q *batchQueue) Defer(_ context.Context, r llm.DeferredRequest) (llm.Decision, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.reqs[r.Key]; ok {
		return llm.Waiting, nil
	}
	if q.reqs == nil {
		q.reqs = map[string]llm.DeferredRequest{}
	}
	q.reqs[r.Key] = r
	return llm.Deferred, nil
}

// answer runs the queued requests against srv, as a batch API would, and
// imports the answers into cache; it returns how many there were.
func (q *batchQueue) answer(t *testing.T, srv *llmtest.Server, cache llm.Cache) int {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	for key, r := range q.reqs {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/chat/completions", bytes.NewReader(r.Body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(llmtest.KeyHeader, key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cr, err := llm.ParseCompletion(body)
		if err != nil {
			t.Fatalf("answer to %s: %v", key, err)
		}
		if err := cache.Put(context.Background(), key, cr); err != nil {
			t.Fatal(err)
		}
	}
	n := len(q.reqs)
	clear(q.reqs)
	return n
}

// roundsConvs are n conversations of `turns` user turns each, every message
// naming its conversation and turn.
func roundsConvs(n, turns int) []*conv.Conversation {
	var out []*conv.Conversation
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("c%d", i)
		var rc []string
		for t := 1; t <= turns; t++ {
			rc = append(rc, "user", fmt.Sprintf("%s asks %d", id, t), "assistant", fmt.Sprintf("%s answers %d at length", id, t))
		}
		out = append(out, build(id, "Be exact.", rc...))
	}
	return out
}

func roundsRun(t *testing.T, convs []*conv.Conversation) *ledger.Ledger {
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
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: convs}); err != nil {
		t.Fatal(err)
	}
	return l
}

// roundsCase is one stage set-up of TestBatchRoundsFollowTheCallGraph.
type roundsCase struct {
	name       string
	strategies []string
	online     bool // the online memory
	ablation   analyze.Ablation
	// rounds is what the batch run takes for the conversations of the
	// test, whatever their length.
	rounds int
}

// buildRoundsStage builds c's stage over l with client cl.
func buildRoundsStage(t *testing.T, c roundsCase, cl *llm.Client, l *ledger.Ledger) (pipeline.Stage, func(int64) (int64, string)) {
	t.Helper()
	an, err := analyze.New(cl, analyze.Options{Ablation: c.ablation})
	if err != nil {
		t.Fatal(err)
	}
	// Floor 1 and cap 2 over conversations whose every turn from the third
	// has issues: the cap is reached well before the long ones end.
	opts := curate.Options{Analyzer: an, Gates: map[string]curate.Gate{curated.OpGatedReset: {Floor: 1, Cap: 2}, curated.OpAugment: {Floor: 1}}}
	var mem *memory.Online
	if c.online {
		mem = memory.NewOnline(an, l, curate.DefaultFrom)
	}
	var sts []curate.Strategy
	for _, name := range c.strategies {
		st, err := curate.OnlineByName(name, opts, mem)
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	if c.online {
		s := curate.NewOnlineStage(sts, counter(t), mem)
		return s, s.BatchRounds
	}
	s := curate.NewStage(sts, counter(t), curate.DefaultFrom)
	return s, s.BatchRounds
}

// roundsServer finds issues from turn 3 on; wrap, when set, rewrites
// answers (analyzetest.Script.Wrap).
func roundsServer(t *testing.T, wrap func(kind, answer string) string) *llmtest.Server {
	return memoryServer(t, 0, analyzetest.Script{Wrap: wrap, Issues: func(turn int) string {
		if turn >= 3 {
			return fmt.Sprintf("drifts at turn %d", turn)
		}
		return analyze.None
	}})
}

func roundsClient(t *testing.T, srv *llmtest.Server, cache llm.Cache, q llm.Deferrer) *llm.Client {
	t.Helper()
	ep := llm.Endpoint{Name: "test", BaseURL: srv.URL, Model: "test-model", Limits: llm.Limits{Concurrency: 8},
		Price: llm.Price{Input: 1, Output: 2}, Output: parse.Tags}
	if q != nil {
		ep.Mode = llm.ModeBatch
	}
	cl, err := llm.New(llm.Options{Endpoints: []llm.Endpoint{ep}, Roles: map[string]llm.RoleBinding{"analyzer": {Endpoint: "test"}},
		Cache: cache, Deferrer: q})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// contextsOf reads every curated context of st from l, by variant, with
// what the final pass paid left out: in batch mode every answer it reads
// comes from the cache.
func contextsOf(t *testing.T, l *ledger.Ledger, st pipeline.Stage) map[string][]curated.Context {
	t.Helper()
	out := map[string][]curated.Context{}
	for _, v := range st.Variants() {
		err := l.Units(context.Background(), curate.StageName, []ledger.Variant{ledger.Variant(v)}, 0, math.MaxInt64, func(u ledger.Unit) error {
			if u.Status != ledger.Done {
				return fmt.Errorf("unit %s of %s turn %d: %s %s", v.Name, u.ConvID, u.Turn, u.Status, u.Error)
			}
			x, err := curated.DecodeContext(u.Output)
			if err != nil {
				return err
			}
			for _, us := range []*analyze.Usage{&x.Info.AnalysisUsage, &x.Info.OperatorUsage} {
				us.Cached, us.CostUSD = 0, 0
			}
			out[v.Name] = append(out[v.Name], x)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// runBatchRounds runs st over l in batch mode until no task waits,
// answering each pass's requests as one batch, and returns the rounds.
func runBatchRounds(ctx context.Context, t *testing.T, l *ledger.Ledger, st pipeline.Stage, q *batchQueue, srv *llmtest.Server) int {
	t.Helper()
	opts := pipeline.Options{Workers: 2, Window: 4, BatchWait: time.Millisecond}
	rounds := 0
	for {
		sum, err := pipeline.Run(ctx, l, st, opts)
		if err != nil {
			t.Fatalf("batch pass %d: %v", rounds+1, err)
		}
		if sum.Deferred == 0 {
			return rounds
		}
		if q.answer(t, srv, l.LLMCache()) == 0 {
			t.Fatalf("pass %d left %d tasks waiting and queued nothing", rounds+1, sum.Deferred)
		}
		if rounds++; rounds > 50 {
			t.Fatal("more than 50 rounds")
		}
	}
}

// TestBatchRoundsFollowTheCallGraph runs curate in batch mode, one pass per
// batch round, and checks that the rounds are the depth of its calls'
// dependencies (what BatchRounds says), the same for conversations of 3
// and of 12 turns, and that the contexts are the online run's.
func TestBatchRoundsFollowTheCallGraph(t *testing.T) {
	const convs = 2
	for _, c := range []roundsCase{
		{name: "gated-reset: two analysis steps", strategies: []string{"fc", "ao", "gated-reset"}, rounds: 2},
		{name: "sum: every summary at once", strategies: []string{"sum"}, rounds: 1},
		{name: "llm-compact: every turn's compaction at once", strategies: []string{"llm-compact", "recent-n=2"}, rounds: 1},
		{name: "rewrite: its call reads the analysis", strategies: []string{"rewrite"}, rounds: 3},
		{name: "every operator and sum share the rounds", strategies: []string{"gated-reset", "augment", "rewrite", "reset", "sum"}, rounds: 3},
		{name: "single-pass ablation", strategies: []string{"gated-reset"}, ablation: analyze.AblationSinglePass, rounds: 1},
		// The online memory is sequential: step 1 of every conversation
		// in the first round, then per conversation step 2, reflection
		// and unify.
		{name: "online memory", strategies: []string{"fc", "gated-reset", "sum"}, online: true, rounds: 1 + 3*convs},
		{name: "online memory with rewrite", strategies: []string{"gated-reset", "rewrite"}, online: true, rounds: 1 + 3*convs + 1},
	} {
		for _, turns := range []int{3, 12} {
			t.Run(fmt.Sprintf("%s, %d turns", c.name, turns), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				opts := pipeline.Options{Workers: 2, Window: 4, BatchWait: time.Millisecond}

				srvOnline := roundsServer(t, nil)
				lo := roundsRun(t, roundsConvs(convs, turns))
				online, _ := buildRoundsStage(t, c, roundsClient(t, srvOnline, lo.LLMCache(), nil), lo)
				if sum, err := pipeline.Run(ctx, lo, online, opts); err != nil || sum.Deferred != 0 {
					t.Fatalf("online run: %v (%d deferred)", err, sum.Deferred)
				}

				srv := roundsServer(t, nil)
				lb := roundsRun(t, roundsConvs(convs, turns))
				q := &batchQueue{}
				st, rounds := buildRoundsStage(t, c, roundsClient(t, srv, lb.LLMCache(), q), lb)
				got := runBatchRounds(ctx, t, lb, st, q, srv)
				if got != c.rounds {
					t.Errorf("%d batch rounds, want %d", got, c.rounds)
				}
				if n, _ := rounds(convs); n != int64(c.rounds) {
					t.Errorf("BatchRounds says %d, want %d", n, c.rounds)
				}
				// The batch run asks what the online run asks, plus, for an
				// operator with a cap, the analyses of the turns past it. The
				// online memory's chain asks for every turn anyway, and
				// never with a cheatsheet it does not have yet.
				asked := keysOf(srv)
				for k := range keysOf(srvOnline) {
					if !asked[k] {
						t.Errorf("the batch run did not ask %.12s, which the online run asked", k)
					}
					delete(asked, k)
				}
				if c.online && len(asked) > 0 {
					t.Errorf("the batch run asked %d requests the online run did not", len(asked))
				}
				want, have := contextsOf(t, lo, online), contextsOf(t, lb, st)
				if len(want) != len(c.strategies) {
					t.Fatalf("the online run has %d variants, want %d", len(want), len(c.strategies))
				}
				for name, xs := range want {
					if !reflect.DeepEqual(have[name], xs) {
						a, _ := json.Marshal(have[name])
						b, _ := json.Marshal(xs)
						t.Errorf("%s: the batch run's contexts differ from the online run's:\n%s\n%s", name, a, b)
					}
				}
			})
		}
	}
}

// keysOf is the set of requests srv was asked, by cache key.
func keysOf(srv *llmtest.Server) map[string]bool {
	out := map[string]bool{}
	for _, c := range srv.Calls() {
		out[c.Key] = true
	}
	return out
}

// TestBatchAnalysisPastTheCapIsNotRead: in batch mode the turns past
// gated-reset's cap are analyzed too, and one whose analysis fails (a
// malformed answer, asked again until it fails) fails nothing, since the
// pass in turn order never reads it; the contexts are the online run's,
// which never asked for it.
func TestBatchAnalysisPastTheCapIsNotRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := roundsCase{strategies: []string{"gated-reset"}}
	// Floor 1, cap 2, issues from turn 3: resets at turns 3 and 4, and the
	// analysis of turn 6 never parses.
	wrap := func(kind, answer string) string {
		if kind == analyzetest.KindEvaluate && strings.Contains(answer, "aligned work of turn 6\n") {
			return "no sections at all"
		}
		return answer
	}
	srvOnline := roundsServer(t, wrap)
	lo := roundsRun(t, roundsConvs(1, 6))
	online, _ := buildRoundsStage(t, c, roundsClient(t, srvOnline, lo.LLMCache(), nil), lo)
	if _, err := pipeline.Run(ctx, lo, online, pipeline.Options{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	srv := roundsServer(t, wrap)
	lb := roundsRun(t, roundsConvs(1, 6))
	q := &batchQueue{}
	st, _ := buildRoundsStage(t, c, roundsClient(t, srv, lb.LLMCache(), q), lb)
	// Two steps, then the two re-asks of turn 6's step 2.
	if got := runBatchRounds(ctx, t, lb, st, q, srv); got != 2+analyze.DefaultRetries {
		t.Errorf("%d batch rounds, want %d", got, 2+analyze.DefaultRetries)
	}
	want, have := contextsOf(t, lo, online), contextsOf(t, lb, st)
	if len(want["gated-reset"]) != 5 || !reflect.DeepEqual(have, want) {
		t.Errorf("the batch run's contexts differ from the online run's:\n%v\n%v", have, want)
	}
}
