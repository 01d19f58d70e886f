package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/replay"
)

// metaStore is a run's settings in memory. failKey, when it matches a key
// being written, fails that write once: the process dying between the
// cheatsheet's write and the step's.
type metaStore struct {
	mu      sync.Mutex
	m       map[string]string
	writes  map[string]int
	failKey string
}

func newMetaStore() *metaStore {
	return &metaStore{m: map[string]string{}, writes: map[string]int{}}
}

func (s *metaStore) Meta(_ context.Context, k string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	return v, ok, nil
}

func (s *metaStore) SetMeta(_ context.Context, k, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failKey != "" && strings.HasSuffix(k, s.failKey) {
		s.failKey = ""
		return errors.New("killed")
	}
	s.m[k] = v
	s.writes[k]++
	return nil
}

var outcomeRE = regexp.MustCompile(`Overall outcome: ([^\n]*)`)

// memoryServer answers the analyzer (its reflection writes back the
// outcome it was shown, and unify keeps every takeaway, so the cheatsheet
// carries each instance's outcome) and the respondent (always 7).
func memoryServer(t *testing.T) *llmtest.Server {
	srv := llmtest.New(t, llmtest.Options{})
	tagged := func(r llmtest.ChatRequest, name, body string) llmtest.Reply {
		n := analyzetest.Nonce(r)
		return llmtest.Reply{Content: "<" + name + ` id="` + n + `">` + "\n" + body + "\n</" + name + ">"}
	}
	srv.Add(llmtest.Rule{Name: "reflect", Match: func(r llmtest.ChatRequest) bool { return analyzetest.Kind(r) == analyzetest.KindReflect },
		Func: func(r llmtest.ChatRequest) llmtest.Reply {
			m := outcomeRE.FindStringSubmatch(r.Last())
			if m == nil {
				t.Errorf("reflection without an outcome:\n%s", r.Last())
				return tagged(r, "takeaways", "- nothing")
			}
			return tagged(r, "takeaways", "- learned from an instance that was "+m[1])
		}})
	srv.Add(llmtest.Rule{Name: "unify", Match: func(r llmtest.ChatRequest) bool { return analyzetest.Kind(r) == analyzetest.KindUnify },
		Func: func(r llmtest.ChatRequest) llmtest.Reply {
			last := r.Last()
			var keep []string
			for _, tag := range []string{"cheatsheet", "takeaways"} {
				if i := strings.Index(last, "<"+tag+">\n"); i >= 0 {
					rest := last[i+len(tag)+3:]
					if j := strings.Index(rest, "\n</"+tag+">"); j >= 0 {
						keep = append(keep, strings.TrimSpace(rest[:j]))
					}
				}
			}
			return tagged(r, "cheatsheet", strings.TrimSpace(strings.Join(keep, "\n")))
		}})
	analyzetest.Install(srv, analyzetest.Script{Issues: func(int) string { return "the earlier answer ignored a shard" }})
	srv.Add(llmtest.Rule{Name: "respondent", Func: func(llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Content: "Working it out.\n" + grade.AnswerPrefix + " 7"}
	}})
	return srv
}

func memoryClient(t *testing.T, srv *llmtest.Server, cache llm.Cache) *llm.Client {
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "test", BaseURL: srv.URL, Model: "test-model", Limits: llm.Limits{Concurrency: 4}}},
		Roles:     map[string]llm.RoleBinding{"analyzer": {Endpoint: "test"}, "respondent": {Endpoint: "test"}},
		Cache:     cache,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// trajectories are three math instances whose references are 7, 8 and 9:
// the respondent, always answering 7, is right on the first only.
func trajectories() (map[string]*conv.Conversation, []replay.Item) {
	convs := map[string]*conv.Conversation{}
	var items []replay.Item
	for i, ref := range []int{7, 8, 9} {
		id := fmt.Sprintf("sharded-GSM8K/%d#r1", i+1)
		meta := fmt.Sprintf(`{"task_id":"sharded-GSM8K/%d","task":"math","answer":"#### %d"}`, i+1, ref)
		convs[id] = &conv.Conversation{ID: id, Meta: json.RawMessage(meta), System: "Solve it.", Messages: []conv.Message{
			{Role: conv.User, Content: fmt.Sprintf("Instance %d: some apples.", i+1)}, {Role: conv.Assistant, Content: "Maybe 3?"},
			{Role: conv.User, Content: "And some more."}, {Role: conv.Assistant, Content: "Final answer: 3"},
		}}
		items = append(items, replay.Item{Seq: int64(10 + i), ID: id})
	}
	return convs, items
}

func memoryArm(t *testing.T, client *llm.Client, store *metaStore, stop func() bool) *replay.MemoryArm {
	an, err := analyze.New(client, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cnt, err := tokens.New("")
	if err != nil {
		t.Fatal(err)
	}
	arm, err := replay.NewMemoryArm(replay.MemoryOptions{
		Client: client, Counter: cnt, Grader: grade.New(grade.Options{}), Strategies: []string{"reset"}, Seed: 3,
		Curate:     curate.Options{Analyzer: an, Gates: map[string]curate.Gate{"reset": {}}},
		Respondent: "respondent", Reruns: 2, Pool: "test-pool", Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	arm.SetRun(nil, stop)
	return arm
}

func timeoutCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The memory arm learns from each graded instance in a seeded order: the
// reflection on an instance is told its outcome, the cheatsheet the next
// instance's step 2 reads carries it, and the report reads one step per
// instance with its grades.
func TestMemoryArmLearnsFromOutcomes(t *testing.T) {
	srv := memoryServer(t)
	store := newMetaStore()
	convs, items := trajectories()
	arm := memoryArm(t, memoryClient(t, srv, llm.NewMemCache()), store, nil)
	load := func(_ context.Context, it replay.Item) (*conv.Conversation, error) { return convs[it.ID], nil }
	done, err := arm.Run(timeoutCtx(t), items, load)
	if err != nil || !done {
		t.Fatalf("done %v, err %v", done, err)
	}
	order := replay.Order(items, 3)
	steps, err := replay.MemoryResults(timeoutCtx(t), store)
	if err != nil || len(steps) != 3 {
		t.Fatalf("%d steps, err %v", len(steps), err)
	}
	want := map[string]string{"sharded-GSM8K/1#r1": "correct", "sharded-GSM8K/2#r1": "incorrect", "sharded-GSM8K/3#r1": "incorrect"}
	for i, st := range steps {
		if st.Pos != i+1 || st.Conv != order[i].ID || st.Seq != order[i].Seq || st.Row != "reset+memory" || st.Turn != 2 || len(st.Reruns) != 2 {
			t.Errorf("step %d: %+v", i+1, st)
		}
		if !strings.HasPrefix(st.Outcome, want[st.Conv]) {
			t.Errorf("step %d (%s): outcome %q, want %s", i+1, st.Conv, st.Outcome, want[st.Conv])
		}
		if i > 0 && st.Before != steps[i-1].After {
			t.Errorf("step %d was curated with cheatsheet %s, but step %d left %s", i+1, st.Before, i, steps[i-1].After)
		}
	}
	if steps[0].Before != "" {
		t.Errorf("the first instance had a cheatsheet: %q", steps[0].Before)
	}
	// Step 2 of each instance reads the outcomes of those before it.
	evals := map[string]string{} // trajectory → its evaluate request
	for _, c := range srv.Calls() {
		if analyzetest.Kind(c.Request) == analyzetest.KindEvaluate {
			if m := instanceRE.FindStringSubmatch(c.Request.Last()); m != nil {
				evals["sharded-GSM8K/"+m[1]+"#r1"] = c.Request.Last()
			}
		}
	}
	for i, st := range steps {
		for j, earlier := range steps {
			line := "learned from an instance that was " + earlier.Outcome
			if got := strings.Contains(evals[st.Conv], line); got != (j < i) {
				t.Errorf("step 2 of instance %d (%s) shows instance %d's outcome: %v, want %v\n%s", i+1, st.Conv, j+1, got, j < i, evals[st.Conv])
			}
		}
	}
}

var instanceRE = regexp.MustCompile(`Instance (\d+): some apples`)

// A run killed between the cheatsheet's write and the step's resumes at
// that instance from the last recorded cheatsheet; no step is written
// twice or lost, and a run with nothing left makes no call.
func TestMemoryArmResumesWithoutRedoingAnUpdate(t *testing.T) {
	srv := memoryServer(t)
	store := newMetaStore()
	convs, items := trajectories()
	cache := llm.NewMemCache()
	load := func(_ context.Context, it replay.Item) (*conv.Conversation, error) { return convs[it.ID], nil }

	// Stopped after the first instance.
	stop := func() bool {
		steps, _ := replay.MemoryResults(context.Background(), store)
		return len(steps) >= 1
	}
	done, err := memoryArm(t, memoryClient(t, srv, cache), store, stop).Run(timeoutCtx(t), items, load)
	if err != nil || done {
		t.Fatalf("stopped run: done %v, err %v", done, err)
	}
	one, _ := replay.MemoryResults(timeoutCtx(t), store)
	if len(one) != 1 {
		t.Fatalf("%d steps after the stop, want 1", len(one))
	}
	// Killed while recording the second instance's step.
	store.failKey = "/step/00000002"
	if _, err := memoryArm(t, memoryClient(t, srv, cache), store, nil).Run(timeoutCtx(t), items, load); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("killed run: %v", err)
	}
	if got, _ := replay.MemoryResults(timeoutCtx(t), store); len(got) != 1 {
		t.Fatalf("%d steps after the kill, want 1", len(got))
	}
	// Resumed: the second and third instances, each recorded once.
	done, err = memoryArm(t, memoryClient(t, srv, cache), store, nil).Run(timeoutCtx(t), items, load)
	if err != nil || !done {
		t.Fatalf("resumed run: done %v, err %v", done, err)
	}
	steps, err := replay.MemoryResults(timeoutCtx(t), store)
	if err != nil || len(steps) != 3 {
		t.Fatalf("%d steps, err %v", len(steps), err)
	}
	if b1, _ := json.Marshal(one[0]); true {
		b2, _ := json.Marshal(steps[0])
		if string(b1) != string(b2) {
			t.Errorf("the first step changed on resume:\n%s\n%s", b1, b2)
		}
	}
	for k, n := range store.writes {
		if strings.Contains(k, "/step/") && n != 1 {
			t.Errorf("%s written %d times", k, n)
		}
	}
	for i := 1; i < len(steps); i++ {
		if steps[i].Before != steps[i-1].After {
			t.Errorf("step %d resumed from cheatsheet %s, not %s", i+1, steps[i].Before, steps[i-1].After)
		}
	}
	// The same updates as a run never interrupted: one reflection and one
	// unify per instance reached the server (the killed step's were
	// answered from the cache when it was redone).
	count := func() (reflect, unify int) {
		for _, c := range srv.Calls() {
			switch analyzetest.Kind(c.Request) {
			case analyzetest.KindReflect:
				reflect++
			case analyzetest.KindUnify:
				unify++
			}
		}
		return
	}
	if r, u := count(); r != 3 || u != 3 {
		t.Errorf("%d reflections and %d unify calls reached the server, want 3 and 3", r, u)
	}
	calls := len(srv.Calls())
	done, err = memoryArm(t, memoryClient(t, srv, cache), store, nil).Run(timeoutCtx(t), items, load)
	if err != nil || !done || len(srv.Calls()) != calls {
		t.Errorf("a finished arm run again: done %v, err %v, %d new calls", done, err, len(srv.Calls())-calls)
	}
}

// The order is fixed by the seed and does not depend on the order the
// pool is listed in; another seed gives another order.
func TestMemoryOrder(t *testing.T) {
	var items []replay.Item
	for i := range 20 {
		items = append(items, replay.Item{Seq: int64(i), ID: fmt.Sprintf("inst/%d#r1", i)})
	}
	rev := make([]replay.Item, len(items))
	for i, it := range items {
		rev[len(items)-1-i] = it
	}
	a, b, c := replay.Order(items, 1), replay.Order(rev, 1), replay.Order(items, 2)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("order depends on the listing:\n%v\n%v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) || fmt.Sprint(a) == fmt.Sprint(items) {
		t.Errorf("seed 1 and 2 or the listing agree: %v", a)
	}
}

func TestNewMemoryArmRefusesStrategiesWithoutMemory(t *testing.T) {
	an, err := analyze.New(nil, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"fc", "concat", "sum"} {
		_, err := replay.NewMemoryArm(replay.MemoryOptions{Strategies: []string{s}, Curate: curate.Options{Analyzer: an}, Grader: grade.New(grade.Options{})})
		if err == nil || !strings.Contains(err.Error(), "reads no cheatsheet") {
			t.Errorf("%s: %v", s, err)
		}
	}
}
