package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/migrations"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// derivedOf yields, for each parent seq, the conversations made from it.
func derivedOf(items ...any) iter.Seq2[int64, *conv.Conversation] {
	return func(yield func(int64, *conv.Conversation) bool) {
		for i := 0; i+1 < len(items); i += 2 {
			if !yield(items[i].(int64), items[i+1].(*conv.Conversation)) {
				return
			}
		}
	}
}

// simConv is a derived conversation with metadata, as a deriving step
// would make one.
func simConv(id string, parent int64, text string) *conv.Conversation {
	c := testConv(id, text)
	c.Format = "lic-sim"
	c.Meta = []byte(fmt.Sprintf(`{"lic_sim":{"parent_seq":%d}}`, parent))
	return c
}

func TestAddDerived(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, _ := mustOpen(t)
	if err := ingestN(ctx, l, "/x.jsonl", 4); err != nil {
		t.Fatal(err)
	}
	res, err := l.AddDerived(ctx, "lic-sim", derivedOf(
		int64(2), simConv("s2a", 2, "a"), int64(2), simConv("s2b", 2, "b"), int64(0), simConv("free", 0, "c"), int64(4), simConv("s4a", 4, "d")))
	if err != nil {
		t.Fatal(err)
	}
	if res != (ledger.DeriveResult{Added: 4}) {
		t.Fatalf("result = %+v, want 4 added", res)
	}
	page, err := l.ConversationPage(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		seq    int64
		id     string
		origin string
		parent int64
	}
	var got []row
	for _, s := range page {
		got = append(got, row{s.Seq, s.Conv.ID, s.Origin, s.Parent})
	}
	want := []row{
		{1, "c00000", "source", 0}, {2, "c00001", "source", 0}, {3, "c00002", "source", 0}, {4, "c00003", "source", 0},
		{5, "s2a", "lic-sim", 2}, {6, "s2b", "lic-sim", 2}, {7, "free", "lic-sim", 0}, {8, "s4a", "lic-sim", 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored:\n%v\nwant\n%v", got, want)
	}
	if s, ok, err := l.Conversation(ctx, "s4a"); err != nil || !ok || s.Origin != "lic-sim" || s.Parent != 4 || string(s.Conv.Meta) != `{"lic_sim":{"parent_seq":4}}` {
		t.Fatalf("Conversation(s4a) = %+v %v %v", s, ok, err)
	}

	// Again, with one more: the stored ones are skipped, the new one comes last.
	res, err = l.AddDerived(ctx, "lic-sim", derivedOf(
		int64(2), simConv("s2a", 2, "a"), int64(2), simConv("s2b", 2, "b"), int64(3), simConv("s3a", 3, "e")))
	if err != nil || res != (ledger.DeriveResult{Added: 1, Existing: 2}) {
		t.Fatalf("re-adding = %+v, %v; want 1 added, 2 existing", res, err)
	}
	if s, _, _ := l.Conversation(ctx, "s3a"); s.Seq != 9 {
		t.Fatalf("the new one has seq %d, want 9", s.Seq)
	}

	ins, err := l.Inputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 2 || ins[1].Path != "derived:lic-sim" || ins[1].Format != ledger.DerivedFormat || ins[1].RecordsDone != 5 || ins[1].Finished {
		t.Fatalf("inputs = %+v, want the derived origin's row with 5 records, unfinished", ins)
	}
	if err := l.FinishDerived(ctx, "lic-sim"); err != nil {
		t.Fatal(err)
	}
	if err := l.FinishDerived(ctx, "compint"); err != nil {
		t.Fatal(err)
	}
	ds, err := l.DerivedOrigins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ledger.DerivedOrigin{{Origin: "compint", Finished: true}, {Origin: "lic-sim", Stored: 5, Finished: true}}; !reflect.DeepEqual(ds, want) {
		t.Fatalf("derived origins = %+v, want %+v", ds, want)
	}
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Conversations != 9 || !reflect.DeepEqual(st.Origins, map[string]int64{"source": 4, "lic-sim": 5, "compint": 0}) {
		t.Fatalf("status counts %d conversations, by origin %v", st.Conversations, st.Origins)
	}
}

func TestAddDerivedRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, _ := mustOpen(t)
	if err := ingestN(ctx, l, "/x.jsonl", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddDerived(ctx, "lic-sim", derivedOf(int64(1), simConv("s1", 1, "a"))); err != nil {
		t.Fatal(err)
	}
	changed := simConv("s1", 1, "a")
	changed.Meta = []byte(`{"lic_sim":{"replicate":2}}`)
	cases := []struct {
		name    string
		origin  string
		items   iter.Seq2[int64, *conv.Conversation]
		want    string
		isClash bool
	}{
		{"the same id with other messages", "lic-sim", derivedOf(int64(1), simConv("s1", 1, "other")), "already stored with other content", true},
		{"the same id with other metadata", "lic-sim", derivedOf(int64(1), changed), "already stored with other content", true},
		{"the same id with another parent", "lic-sim", derivedOf(int64(2), simConv("s1", 1, "a")), "parent seq 1, now 2", true},
		{"the same id under another origin", "compint", derivedOf(int64(1), simConv("s1", 1, "a")), "it is a lic-sim conversation", true},
		{"an ingested conversation's id", "lic-sim", derivedOf(int64(1), testConv("c00000", "question 0")), "it is a source conversation", true},
		{"a parent the run does not have", "lic-sim", derivedOf(int64(99), simConv("s99", 99, "a")), "parent seq 99 is not in the run", false},
		{"no id", "lic-sim", derivedOf(int64(1), simConv("", 1, "a")), "no id", false},
		{"the source origin", "source", derivedOf(int64(1), simConv("s9", 1, "a")), "is for ingested conversations", false},
		{"an origin that is not a name", "LiC Sim", derivedOf(int64(1), simConv("s9", 1, "a")), "want lowercase letters", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := l.AddDerived(ctx, c.origin, c.items)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
			if got := errors.Is(err, ledger.ErrDerivedConflict); got != c.isClash {
				t.Fatalf("errors.Is(err, ErrDerivedConflict) = %v, want %v (%v)", got, c.isClash, err)
			}
		})
	}
	// A refused batch stores nothing of itself: the good one before the
	// clash in the same batch is not kept either.
	if _, err := l.AddDerived(ctx, "lic-sim", derivedOf(int64(2), simConv("s2", 2, "b"), int64(1), simConv("s1", 1, "other"))); err == nil {
		t.Fatal("a batch with a clash was stored")
	}
	if _, ok, _ := l.Conversation(ctx, "s2"); ok {
		t.Fatal("a refused batch left a conversation behind")
	}
	if n, _ := l.CountConversations(ctx); n != 3 {
		t.Fatalf("%d conversations after refusals, want 3", n)
	}
}

// A derive cut short by a cancelled context keeps the batches it
// committed; yielding everything again stores the rest in the same seqs an
// uninterrupted derive gives.
func TestAddDerivedResumesInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 700 // almost three batches
	items := func(stopAt int, cancel func()) iter.Seq2[int64, *conv.Conversation] {
		return func(yield func(int64, *conv.Conversation) bool) {
			for i := range n {
				if i == stopAt {
					cancel()
				}
				if !yield(int64(i%3+1), simConv(fmt.Sprintf("d%04d", i), int64(i%3+1), fmt.Sprint(i))) {
					return
				}
			}
		}
	}
	ids := func(l *ledger.Ledger) []string {
		var out []string
		err := l.In(ledger.MustOrigins("lic-sim")).EachPage(ctx, 100, func(page []ledger.Stored, _, _ int64) error {
			for _, s := range page {
				out = append(out, fmt.Sprintf("%d:%s", s.Seq, s.Conv.ID))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	whole, _ := mustOpen(t)
	if err := ingestN(ctx, whole, "/x.jsonl", 3); err != nil {
		t.Fatal(err)
	}
	if res, err := whole.AddDerived(ctx, "lic-sim", items(-1, nil)); err != nil || res.Added != n {
		t.Fatalf("uninterrupted: %+v %v", res, err)
	}
	want := ids(whole)

	cut, _ := mustOpen(t)
	if err := ingestN(ctx, cut, "/x.jsonl", 3); err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	res, err := cut.AddDerived(cctx, "lic-sim", items(400, stop))
	if !errors.Is(err, context.Canceled) || res.Added != 256 {
		t.Fatalf("cut short: %+v, %v; want the first batch of 256 kept and context.Canceled", res, err)
	}
	res, err = cut.AddDerived(ctx, "lic-sim", items(-1, nil))
	if err != nil || res.Added != n-256 || res.Existing != 256 {
		t.Fatalf("resumed: %+v, %v", res, err)
	}
	if got := ids(cut); !slices.Equal(got, want) {
		t.Fatalf("resumed derive stored a different order: first differences %v", firstDiff(got, want))
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: %s vs %s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}

func TestScope(t *testing.T) {
	all := ledger.AllOrigins
	src := ledger.MustOrigins("source")
	both := ledger.MustOrigins("lic-sim", "source", "source")
	if !all.All() || src.All() || !src.Has("source") || src.Has("lic-sim") || !all.Has("anything") {
		t.Fatal("Has/All wrong")
	}
	if both.String() != "lic-sim,source" || all.String() != "all" {
		t.Fatalf("String = %q, %q", both.String(), all.String())
	}
	if s, err := ledger.Origins(); err != nil || !s.All() {
		t.Fatal("an empty list must be every origin")
	}
	if _, err := ledger.Origins("source", "Bad Name"); err == nil {
		t.Fatal("an invalid origin was accepted")
	}
	cases := []struct {
		a, b ledger.Scope
		want ledger.Scope
		ok   bool
	}{
		{all, src, src, true},
		{both, all, both, true},
		{both, src, src, true},
		{src, ledger.MustOrigins("compint"), ledger.Scope{}, false},
	}
	for _, c := range cases {
		got, ok := c.a.Intersect(c.b)
		if ok != c.ok || (ok && !got.Equal(c.want)) {
			t.Errorf("%s ∩ %s = %s %v, want %s %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

// scopedRun is a run with 30 ingested conversations and, derived from
// every third, 10 lic-sim ones and from every fifth 6 compint ones (seqs
// 31–46), with curate tasks recorded over some of each.
func scopedRun(t *testing.T) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	l, _ := mustOpen(t)
	if err := ingestN(ctx, l, "/x.jsonl", 30); err != nil {
		t.Fatal(err)
	}
	var sims, comps []any
	for p := int64(3); p <= 30; p += 3 {
		sims = append(sims, p, simConv(fmt.Sprintf("sim%02d", p), p, "x"))
	}
	for p := int64(5); p <= 30; p += 5 {
		comps = append(comps, p, simConv(fmt.Sprintf("comp%02d", p), p, "y"))
	}
	if _, err := l.AddDerived(ctx, "lic-sim", derivedOf(sims...)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddDerived(ctx, "compint", derivedOf(comps...)); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestViewCountsAndPages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := scopedRun(t)
	cases := []struct {
		scope ledger.Scope
		first int64 // first seq
		n     int64
	}{
		{ledger.AllOrigins, 1, 46},
		{ledger.MustOrigins("source"), 1, 30},
		{ledger.MustOrigins("lic-sim"), 31, 10},
		{ledger.MustOrigins("compint"), 41, 6},
		{ledger.MustOrigins("lic-sim", "compint"), 31, 16},
		{ledger.MustOrigins("source", "compint"), 1, 36},
		{ledger.MustOrigins("source", "compint", "lic-sim"), 1, 46},
		{ledger.MustOrigins("other"), 0, 0},
	}
	for _, c := range cases {
		t.Run(c.scope.String(), func(t *testing.T) {
			v := l.In(c.scope)
			n, err := v.CountConversations(ctx)
			if err != nil || n != c.n {
				t.Fatalf("count = %d, %v; want %d", n, err, c.n)
			}
			for _, size := range []int{1, 4, 100} {
				var seqs []int64
				err := v.EachPage(ctx, size, func(page []ledger.Stored, after, upto int64) error {
					if len(page) == 0 || len(page) > size || page[0].Seq <= after || page[len(page)-1].Seq != upto {
						t.Fatalf("page of %d in (%d, %d]", len(page), after, upto)
					}
					// A scoped page's range starts at its first conversation,
					// so reading units for it skips other origins before it.
					if !c.scope.All() && after != page[0].Seq-1 {
						t.Fatalf("scoped page from seq %d has range (%d, %d]", page[0].Seq, after, upto)
					}
					for _, s := range page {
						if !c.scope.Has(s.Origin) || s.Conv == nil {
							t.Fatalf("page holds seq %d of origin %q", s.Seq, s.Origin)
						}
						seqs = append(seqs, s.Seq)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(seqs)) != c.n || !slices.IsSorted(seqs) || (c.n > 0 && seqs[0] != c.first) {
					t.Fatalf("page size %d walked %v", size, seqs)
				}
			}
		})
	}
}

func TestViewPlanningAndProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := scopedRun(t)
	fc := ledger.Variant{Name: "fc", Version: "v1"}
	// fc is recorded on source seqs 1–10 (seq 4 failed, with a failed
	// unit) and on the first two lic-sim ones (31, 32), as if the stage
	// had once run over every origin.
	var tasks []ledger.TaskResult
	for _, seq := range []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 31, 32} {
		tr := ledger.TaskResult{TaskID: ledger.TaskID{Stage: "curate", Variant: "fc", Version: "v1", ConvSeq: seq}, ConvID: fmt.Sprint(seq), Status: ledger.Done,
			Units: []ledger.UnitResult{{Turn: 1, Status: ledger.Done}, {Turn: 2, Status: ledger.Done}}}
		if seq == 4 || seq == 32 {
			tr.Status = ledger.Failed
			tr.Units[1] = ledger.UnitResult{Turn: 2, Status: ledger.Failed, Error: fmt.Sprintf("parsing answer of seq %d", seq)}
		}
		tasks = append(tasks, tr)
	}
	if err := l.CommitTasks(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	pendingSeqs := func(v ledger.View) []int64 {
		var out []int64
		if err := v.EachPending(ctx, "curate", []ledger.Variant{fc}, 7, func(page []ledger.Pending) error {
			for _, p := range page {
				if p.Conv == nil || !v.Scope().Has(p.Origin) {
					t.Fatalf("pending seq %d: %+v", p.Seq, p.Stored)
				}
				out = append(out, p.Seq)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	seqRange := func(from, to int64) []int64 {
		var out []int64
		for s := from; s <= to; s++ {
			out = append(out, s)
		}
		return out
	}
	src := ledger.MustOrigins("source")
	sim := ledger.MustOrigins("lic-sim")
	cases := []struct {
		scope        ledger.Scope
		pending      []int64
		done, failed int64
	}{
		{ledger.AllOrigins, append(seqRange(11, 30), seqRange(33, 46)...), 10, 2},
		{src, seqRange(11, 30), 9, 1},
		{sim, seqRange(33, 40), 1, 1},
		{ledger.MustOrigins("compint"), seqRange(41, 46), 0, 0},
	}
	for _, c := range cases {
		v := l.In(c.scope)
		if got := pendingSeqs(v); !slices.Equal(got, c.pending) {
			t.Errorf("%s: pending %v, want %v", c.scope, got, c.pending)
		}
		done, failed, err := v.TaskCounts(ctx, "curate", fc)
		if err != nil || done != c.done || failed != c.failed {
			t.Errorf("%s: task counts %d done %d failed, %v; want %d, %d", c.scope, done, failed, err, c.done, c.failed)
		}
		var units []int64
		if err := v.Units(ctx, "curate", []ledger.Variant{fc}, 0, 100, func(u ledger.Unit) error {
			units = append(units, u.ConvSeq)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if int64(len(units)) != 2*(c.done+c.failed) {
			t.Errorf("%s: units of %v, want 2 each of %d tasks", c.scope, units, c.done+c.failed)
		}
	}

	// Progress counts each stage in its recorded scope.
	if err := l.SetPlan(ctx, "curate", []ledger.Variant{fc}); err != nil {
		t.Fatal(err)
	}
	progress := func() ledger.StageStatus {
		t.Helper()
		st, err := l.Progress(ctx)
		if err != nil || len(st) != 1 {
			t.Fatalf("progress = %+v, %v", st, err)
		}
		one, err := l.StageProgress(ctx, "curate", fc)
		if err != nil || !reflect.DeepEqual(one, st[0]) {
			t.Fatalf("StageProgress = %+v, %v; Progress says %+v", one, err, st[0])
		}
		return st[0]
	}
	group := func(seq int64) []ledger.FailureGroup {
		return []ledger.FailureGroup{{Reason: "parsing answer of seq N", Units: 1, Example: ledger.FailedUnit{ConvID: fmt.Sprint(seq), ConvSeq: seq, Turn: 2, Error: fmt.Sprintf("parsing answer of seq %d", seq)}}}
	}
	st := progress()
	if st.Done != 10 || st.Failed != 2 || st.Pending != 34 || st.UnitsDone != 22 || st.UnitsFailed != 2 || len(st.Failures) != 1 || st.Failures[0].Units != 2 {
		t.Fatalf("every origin: %+v", st)
	}
	for _, c := range []struct {
		scope ledger.Scope
		want  ledger.StageStatus
	}{
		{src, ledger.StageStatus{Stage: "curate", Variant: "fc", Version: "v1", Done: 9, Failed: 1, Pending: 20, UnitsDone: 19, UnitsFailed: 1, Failures: group(4)}},
		{sim, ledger.StageStatus{Stage: "curate", Variant: "fc", Version: "v1", Done: 1, Failed: 1, Pending: 8, UnitsDone: 3, UnitsFailed: 1, Failures: group(32)}},
		{ledger.MustOrigins("compint"), ledger.StageStatus{Stage: "curate", Variant: "fc", Version: "v1", Pending: 6, Failures: []ledger.FailureGroup{}}},
	} {
		if err := l.SetScope(ctx, "curate", c.scope); err != nil {
			t.Fatal(err)
		}
		if got := progress(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("scope %s: progress\n%+v\nwant\n%+v", c.scope, got, c.want)
		}
	}
	if err := l.SetScope(ctx, "curate", ledger.AllOrigins); err != nil {
		t.Fatal(err)
	}
	if sc, err := l.Scopes(ctx); err != nil || len(sc) != 0 {
		t.Fatalf("scopes after resetting to every origin: %v %v", sc, err)
	}
	if got := progress(); got.Pending != 34 {
		t.Fatalf("back to every origin: %+v", got)
	}
}

// A run file from before origins were stored, read while an older ac3
// writes it: every conversation is an ingested one.
func TestViewOfAnOlderRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := olderRun(t, 3)
	l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		scope ledger.Scope
		n     int64
	}{{ledger.AllOrigins, 3}, {ledger.MustOrigins("source"), 3}, {ledger.MustOrigins("lic-sim"), 0}} {
		v := l.In(c.scope)
		n, err := v.CountConversations(ctx)
		if err != nil || n != c.n {
			t.Fatalf("%s: count %d, %v; want %d", c.scope, n, err, c.n)
		}
		page, err := v.ConversationPage(ctx, 0, 10)
		if err != nil || int64(len(page)) != c.n {
			t.Fatalf("%s: page of %d, %v", c.scope, len(page), err)
		}
		for _, s := range page {
			if s.Origin != "source" || s.Parent != 0 {
				t.Fatalf("%s: %+v", c.scope, s)
			}
		}
		var pending int
		if err := v.EachPending(ctx, "curate", []ledger.Variant{{Name: "fc", Version: "v1"}}, 2, func(p []ledger.Pending) error { pending += len(p); return nil }); err != nil || int64(pending) != c.n {
			t.Fatalf("%s: %d pending, %v", c.scope, pending, err)
		}
	}
	st, err := l.Status(ctx)
	if err != nil || !reflect.DeepEqual(st.Origins, map[string]int64{"source": 3}) {
		t.Fatalf("status of an older run: %v %v", st.Origins, err)
	}
	// The first writer migrates it: the ingested conversations are source.
	l.Close()
	w, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n, err := w.In(ledger.MustOrigins("source")).CountConversations(ctx); err != nil || n != 3 {
		t.Fatalf("after migrating: %d source conversations, %v", n, err)
	}
	if _, err := w.AddDerived(ctx, "lic-sim", derivedOf(int64(1), simConv("s1", 1, "a"))); err != nil {
		t.Fatal(err)
	}
	if n, err := w.In(ledger.MustOrigins("lic-sim")).CountConversations(ctx); err != nil || n != 1 {
		t.Fatalf("after deriving: %d lic-sim conversations, %v", n, err)
	}
}

func TestSalvageKeepsOrigins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, path := mustOpen(t)
	if err := ingestN(ctx, l, "/x.jsonl", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AddDerived(ctx, "lic-sim", derivedOf(int64(2), simConv("s2", 2, "a"), int64(0), simConv("s0", 0, "b"))); err != nil {
		t.Fatal(err)
	}
	if err := l.FinishDerived(ctx, "lic-sim"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	dst := filepath.Join(t.TempDir(), "copy.db")
	if _, err := ledger.Salvage(ctx, path, dst); err != nil {
		t.Fatal(err)
	}
	c, err := ledger.Open(ctx, dst, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	page, err := c.In(ledger.MustOrigins("lic-sim")).ConversationPage(ctx, 0, 10)
	if err != nil || len(page) != 2 || page[0].Seq != 4 || page[0].Parent != 2 || page[1].Parent != 0 || page[1].Origin != "lic-sim" {
		t.Fatalf("salvaged derived conversations: %+v, %v", page, err)
	}
	if ds, err := c.DerivedOrigins(ctx); err != nil || len(ds) != 1 || !ds[0].Finished || ds[0].Stored != 2 {
		t.Fatalf("salvaged derived origin: %+v %v", ds, err)
	}
}

// olderRun writes a run file of n ingested conversations with the schema
// before migration 0004, as an older ac3 left it.
func olderRun(t *testing.T, n int) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	l, err := ledger.Open(ctx, src, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ingestN(ctx, l, "/x.jsonl", n); err != nil {
		t.Fatal(err)
	}
	l.Close()
	path := filepath.Join(dir, "old.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)`}
	for _, m := range all {
		if m.Name >= "0004" {
			break
		}
		stmts = append(stmts, m.SQL, fmt.Sprintf(`INSERT INTO schema_migrations VALUES ('%s', '')`, m.Name))
	}
	stmts = append(stmts,
		fmt.Sprintf(`ATTACH DATABASE 'file:%s?mode=ro' AS src`, src),
		`INSERT INTO inputs SELECT * FROM src.inputs`,
		`INSERT INTO conversations SELECT seq, id, content_hash, input_id, source_line, source_row, format, user_turns, language, data FROM src.conversations`,
		`DETACH DATABASE src`,
		`PRAGMA journal_mode = WAL`,
	)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}
