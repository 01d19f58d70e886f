package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// simStage stands for a simulator: over ingested conversations only, it
// writes per conversation one unit per replicate whose output is the
// trajectory's messages.
type simStage struct {
	replicates int
	failOn     string
}

func (s *simStage) Name() string { return "simulate" }
func (s *simStage) Variants() []pipeline.Variant {
	return []pipeline.Variant{{Name: "verbatim", Version: "1"}}
}
func (s *simStage) Scope() ledger.Scope { return ledger.MustOrigins(ledger.OriginSource) }
func (s *simStage) Process(_ context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	if t.Origin != ledger.OriginSource {
		return nil, fmt.Errorf("simulating %s of origin %q", t.Conv.ID, t.Origin)
	}
	var units []pipeline.Unit
	for r := 1; r <= s.replicates; r++ {
		var msgs []conv.Message
		for _, tr := range t.Conv.Turns() {
			msgs = append(msgs, t.Conv.Messages[tr.User], conv.Message{Role: conv.Assistant, Content: fmt.Sprintf("answer %d of replicate %d", tr.Index, r)})
		}
		b, _ := json.Marshal(msgs)
		u := pipeline.Unit{Turn: r, Output: b}
		if t.Conv.ID == s.failOn {
			u.Failed, u.Error = true, "simulator broke"
		}
		units = append(units, u)
	}
	return []pipeline.Result{{Variant: t.Variants[0], Units: units}}, nil
}

// materialise turns each parent's simulated units into trajectories, the
// way a LiC materialisation step reads a finished stage.
func materialise(l *ledger.Ledger) pipeline.Visit {
	return pipeline.Each(func(ctx context.Context, s ledger.Stored) ([]*conv.Conversation, error) {
		units, err := l.ConversationUnits(ctx, "simulate", s.Conv.ID, 0)
		if err != nil {
			return nil, err
		}
		var out []*conv.Conversation
		for _, u := range units {
			var msgs []conv.Message
			if err := json.Unmarshal(u.Output, &msgs); err != nil {
				return nil, err
			}
			meta, _ := json.Marshal(map[string]any{"sim": map[string]any{"parent": s.Conv.ID, "replicate": u.Turn}})
			out = append(out, &conv.Conversation{ID: fmt.Sprintf("%s/sim%d", s.Conv.ID, u.Turn), Format: "sim", Messages: msgs, Meta: meta})
		}
		return out, nil
	})
}

// stitcher folds consecutive parents into contexts of three, as a CompInt
// builder stitches conversations to a length; the last, short one is
// emitted by Finish.
type stitcher struct {
	msgs []conv.Message
	ids  []string
	last int64
}

func (st *stitcher) visit(_ context.Context, s ledger.Stored, emit pipeline.Emit) error {
	st.msgs = append(st.msgs, s.Conv.Messages...)
	st.ids = append(st.ids, s.Conv.ID)
	st.last = s.Seq
	if len(st.ids) == 3 {
		return st.flush(emit)
	}
	return nil
}

func (st *stitcher) flush(emit pipeline.Emit) error {
	if len(st.ids) == 0 {
		return nil
	}
	c := &conv.Conversation{ID: "stitch:" + strings.Join(st.ids, "+"), Format: "stitched", Messages: st.msgs}
	st.msgs, st.ids = nil, nil
	return emit(st.last, c)
}

type row struct {
	Seq    int64
	ID     string
	Origin string
	Parent int64
}

func rows(t *testing.T, l *ledger.Ledger) []row {
	t.Helper()
	var out []row
	if err := l.EachPage(context.Background(), 64, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			out = append(out, row{s.Seq, s.Conv.ID, s.Origin, s.Parent})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// deriveAll runs the simulator, then both derivations, as a run would; cut
// (when > 0) cancels the context once that many parents of the first
// derivation were visited, and then resumes.
func deriveAll(t *testing.T, cut int, stop bool) []row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := seed(t, 40)
	sim := &simStage{replicates: 2}
	if _, err := pipeline.Run(ctx, l, sim, pipeline.Options{Workers: 3, BatchSize: 5}); err != nil {
		t.Fatal(err)
	}
	if err := pipeline.Barrier(ctx, l, sim, ledger.AllOrigins); err != nil {
		t.Fatal(err)
	}
	src := ledger.MustOrigins(ledger.OriginSource)
	opts := pipeline.DeriveOptions{PageSize: 7, BatchSize: 4}
	if cut > 0 {
		dctx, kill := context.WithCancel(ctx)
		stopCh := make(chan struct{})
		var once sync.Once
		visited := 0
		inner := materialise(l)
		cutVisit := func(ctx context.Context, s ledger.Stored, emit pipeline.Emit) error {
			if visited++; visited == cut {
				once.Do(func() {
					if stop {
						close(stopCh)
					} else {
						kill()
					}
				})
			}
			return inner(ctx, s, emit)
		}
		o := opts
		o.Stop = stopCh
		sum, err := pipeline.Derive(dctx, l, "sim", src, cutVisit, o)
		kill()
		switch {
		case stop && cut == 40:
			// Stopped while visiting the last parent: nothing was left.
			if err != nil || sum.Stopped {
				t.Fatalf("derive stopped at the last parent: %+v, %v", sum, err)
			}
		case stop:
			if err != nil || !sum.Stopped || sum.Parents != int64(cut) {
				t.Fatalf("stopped derive: %+v, %v", sum, err)
			}
			// Stopping stores what was emitted; the derivation stays
			// unfinished.
			if ds, _ := l.DerivedOrigins(ctx); len(ds) != 1 || ds[0].Finished || ds[0].Stored != int64(2*cut) {
				t.Fatalf("after the stop: %+v; want %d stored, unfinished", ds, 2*cut)
			}
		default:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("killed derive: %+v, %v; want context.Canceled", sum, err)
			}
			// Killed: the batches committed before stay, the rest is lost.
			if ds, _ := l.DerivedOrigins(ctx); len(ds) > 1 || (len(ds) == 1 && (ds[0].Finished || ds[0].Stored%int64(opts.BatchSize) != 0)) {
				t.Fatalf("after the kill: %+v; want whole batches stored, unfinished", ds)
			}
		}
	}
	sum, err := pipeline.Derive(ctx, l, "sim", src, materialise(l), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Parents != 40 || sum.Added+sum.Existing != 80 || (cut == 0 && sum.Existing != 0) || (stop && cut < 40 && sum.Existing != int64(2*cut)) {
		t.Fatalf("derive = %+v", sum)
	}
	st := &stitcher{}
	if _, err := pipeline.Derive(ctx, l, "stitched", src, st.visit, pipeline.DeriveOptions{Finish: func(_ context.Context, emit pipeline.Emit) error { return st.flush(emit) }}); err != nil {
		t.Fatal(err)
	}
	ds, err := l.DerivedOrigins(ctx)
	if err != nil || len(ds) != 2 || !ds[0].Finished || !ds[1].Finished || ds[0].Stored != 80 || ds[1].Stored != 14 {
		t.Fatalf("derived origins = %+v, %v", ds, err)
	}
	return rows(t, l)
}

func TestDeriveIsDeterministicAcrossACut(t *testing.T) {
	want := deriveAll(t, 0, false)
	if len(want) != 40+80+14 {
		t.Fatalf("%d conversations, want 134", len(want))
	}
	// The shape: trajectories in parent order, replicates in order, then
	// the stitched contexts, the last one short.
	if want[40] != (row{41, "c000/sim1", "sim", 1}) || want[41] != (row{42, "c000/sim2", "sim", 1}) || want[119] != (row{120, "c039/sim2", "sim", 40}) {
		t.Fatalf("trajectories: %v %v %v", want[40], want[41], want[119])
	}
	if want[120] != (row{121, "stitch:c000+c001+c002", "stitched", 3}) || want[133] != (row{134, "stitch:c039", "stitched", 40}) {
		t.Fatalf("stitched: %v %v", want[120], want[133])
	}
	for _, cut := range []int{1, 9, 23, 40} {
		for _, stop := range []bool{false, true} {
			t.Run(fmt.Sprintf("cut after %d parents, stop %v", cut, stop), func(t *testing.T) {
				if got := deriveAll(t, cut, stop); !slices.Equal(got, want) {
					t.Fatalf("a resumed derivation stored\n%v\nwant\n%v", got, want)
				}
			})
		}
	}
}

func TestDeriveRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 5)
	none := func(context.Context, ledger.Stored, pipeline.Emit) error { return nil }
	cases := []struct {
		name   string
		origin string
		scope  ledger.Scope
		visit  pipeline.Visit
		want   string
	}{
		{"its own output as parents", "sim", ledger.AllOrigins, none, "includes the conversations it makes"},
		{"the source origin", "source", ledger.MustOrigins("sim"), none, "for ingested conversations"},
		{"a bad origin", "Sim!", ledger.AllOrigins, none, "want lowercase"},
		{"a visit that fails", "sim", ledger.MustOrigins("source"), func(context.Context, ledger.Stored, pipeline.Emit) error { return errors.New("no shards") }, "from conversation c000: no shards"},
		{"a visit that panics", "sim", ledger.MustOrigins("source"), func(context.Context, ledger.Stored, pipeline.Emit) error { panic("bug") }, "bug"},
		{"a changed derivation", "sim", ledger.MustOrigins("source"), pipeline.Each(func(_ context.Context, s ledger.Stored) ([]*conv.Conversation, error) {
			return []*conv.Conversation{{ID: "fixed", Messages: []conv.Message{{Role: conv.User, Content: s.Conv.ID}}}}, nil
		}), "already stored with other content"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := pipeline.Derive(ctx, l, c.origin, c.scope, c.visit, pipeline.DeriveOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestBarrier(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 6)
	sim := &simStage{replicates: 1, failOn: "c002"}
	var ie *pipeline.IncompleteError
	if err := pipeline.Barrier(ctx, l, sim, ledger.AllOrigins); !errors.As(err, &ie) || ie.Pending != 6 || ie.Failed != 0 {
		t.Fatalf("before running: %v", err)
	}
	if _, err := pipeline.Run(ctx, l, sim, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	err := pipeline.Barrier(ctx, l, sim, ledger.AllOrigins)
	if !errors.As(err, &ie) || ie.Pending != 0 || ie.Failed != 1 || !strings.Contains(err.Error(), "ac3 retry --stage simulate") {
		t.Fatalf("with a failed task: %v", err)
	}
	if _, err := l.Requeue(ctx, "simulate"); err != nil {
		t.Fatal(err)
	}
	sim.failOn = ""
	if _, err := pipeline.Run(ctx, l, sim, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := pipeline.Barrier(ctx, l, sim, ledger.AllOrigins); err != nil {
		t.Fatalf("after the retry: %v", err)
	}
	// Derived conversations are out of the simulator's scope: they do not
	// make it unfinished.
	if _, err := pipeline.Derive(ctx, l, "sim", sim.Scope(), materialise(l), pipeline.DeriveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pipeline.Barrier(ctx, l, sim, ledger.AllOrigins); err != nil {
		t.Fatalf("after deriving: %v", err)
	}
}

// Stages run over their scope: the planner, the pending counts and the
// progress status all see the same conversations.
func TestRunScopes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := seed(t, 10)
	sim := &simStage{replicates: 2}
	if _, err := pipeline.Run(ctx, l, sim, pipeline.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Derive(ctx, l, "sim", sim.Scope(), materialise(l), pipeline.DeriveOptions{}); err != nil {
		t.Fatal(err)
	}
	// The simulator is scoped to source: the 20 trajectories are not its.
	if p, rec, err := pipeline.Pending(ctx, l, sim); err != nil || p != 0 || rec != 10 {
		t.Fatalf("simulator after deriving: %d pending, %d recorded, %v", p, rec, err)
	}
	if _, err := pipeline.Run(ctx, l, sim, pipeline.Options{Scope: ledger.MustOrigins("sim")}); err == nil || !strings.Contains(err.Error(), "runs over source conversations only") {
		t.Fatalf("running the simulator on its own trajectories: %v", err)
	}

	counting := func() *originStage {
		return &originStage{countStage: countStage{variants: []pipeline.Variant{{Name: "a", Version: "1"}, {Name: "b", Version: "1"}}}, seen: map[string]int{}}
	}
	cases := []struct {
		on      ledger.Scope
		planned int64
		seen    map[string]int
	}{
		{ledger.MustOrigins("sim"), 40, map[string]int{"sim": 20}},
		{ledger.MustOrigins("source"), 20, map[string]int{"source": 10}},
		{ledger.AllOrigins, 60, map[string]int{"source": 10, "sim": 20}},
	}
	for _, c := range cases {
		t.Run("on "+c.on.String(), func(t *testing.T) {
			l := seed(t, 10)
			if _, err := pipeline.Run(ctx, l, sim, pipeline.Options{}); err != nil {
				t.Fatal(err)
			}
			if _, err := pipeline.Derive(ctx, l, "sim", sim.Scope(), materialise(l), pipeline.DeriveOptions{}); err != nil {
				t.Fatal(err)
			}
			s := counting()
			plan, err := pipeline.Begin(ctx, l, s, c.on)
			if err != nil || plan.Pending != c.planned {
				t.Fatalf("pending = %d, %v; want %d", plan.Pending, err, c.planned)
			}
			progressPending := func() int64 {
				st, err := l.Progress(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var n int64
				for _, ss := range st {
					if ss.Stage == "count" {
						n += ss.Pending
					}
				}
				return n
			}
			if got := progressPending(); got != c.planned {
				t.Fatalf("status counts %d never attempted, want %d", got, c.planned)
			}
			sum, err := pipeline.Run(ctx, l, s, pipeline.Options{Scope: c.on, PageSize: 3})
			if err != nil || sum.Planned != c.planned || sum.Done != c.planned {
				t.Fatalf("run = %+v, %v", sum, err)
			}
			if !mapsEqual(s.seen, c.seen) {
				t.Fatalf("the stage saw %v, want %v", s.seen, c.seen)
			}
			if got := progressPending(); got != 0 {
				t.Fatalf("status counts %d never attempted after the run", got)
			}
		})
	}
}

// originStage is a countStage that counts the origins it is given.
type originStage struct {
	countStage
	mu   sync.Mutex
	seen map[string]int
}

func (s *originStage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	s.mu.Lock()
	s.seen[t.Origin]++
	s.mu.Unlock()
	if t.Origin == "sim" && t.Parent == 0 {
		return nil, fmt.Errorf("trajectory %s without its parent", t.Conv.ID)
	}
	return s.countStage.Process(ctx, t)
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestTurns(t *testing.T) {
	cases := []struct {
		sel   pipeline.Turns
		n     int
		first int
		tag   string
	}{
		{pipeline.Turns{}, 5, 1, ""},
		{pipeline.Turns{From: 2}, 5, 2, ";from=2"},
		{pipeline.Turns{Last: 1}, 5, 5, ";last=1"},
		{pipeline.Turns{Last: 2}, 5, 4, ";last=2"},
		{pipeline.Turns{Last: 9}, 5, 1, ";last=9"},
		{pipeline.Turns{From: 2, Last: 9}, 5, 2, ";from=2;last=9"},
		{pipeline.Turns{From: 4, Last: 3}, 5, 4, ";from=4;last=3"},
		{pipeline.Turns{From: 7}, 5, 7, ";from=7"},
		{pipeline.Turns{Last: 1}, 0, 1, ";last=1"},
	}
	for _, c := range cases {
		if got := c.sel.First(c.n); got != c.first {
			t.Errorf("%+v.First(%d) = %d, want %d", c.sel, c.n, got, c.first)
		}
		if got := c.sel.Tag(); got != c.tag {
			t.Errorf("%+v.Tag() = %q, want %q", c.sel, got, c.tag)
		}
		for turn := 0; turn <= c.n+1; turn++ {
			if got, want := c.sel.Has(turn, c.n), turn >= c.first && turn >= 1 && turn <= c.n; got != want {
				t.Errorf("%+v.Has(%d, %d) = %v", c.sel, turn, c.n, got)
			}
		}
	}
	if err := (pipeline.Turns{Last: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "last_turns") {
		t.Fatalf("negative last_turns: %v", err)
	}
}
