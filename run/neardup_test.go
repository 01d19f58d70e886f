package run_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/pipeline/shard"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/filter"
)

// nearInput writes a canonical JSONL file of distinct conversations with
// near duplicates injected among them, and returns the injected ones: id →
// the id of the conversation each repeats. Kinds of copy, in turn: the same
// user turns with other answers; one word of 80 or more changed; an exact
// copy (an exact duplicate, not a near one); and a control, half its words
// changed, which must be kept.
func nearInput(t *testing.T, dir string, originals int) (path string, near, exact, controls map[string]string) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	vocab := make([]string, 4000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("%c%c%c%d", 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26, i%7)
	}
	words := func(n int) []string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return w
	}
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type rec struct {
		ID       string `json:"id"`
		Messages []msg  `json:"messages"`
		Language string `json:"language"`
	}
	var recs []rec
	var users [][]string // each original's user turns, as words
	near, exact, controls = map[string]string{}, map[string]string{}, map[string]string{}
	for i := range originals {
		turns := 1 + r.IntN(3)
		var user []string
		o := rec{ID: fmt.Sprintf("orig-%03d", i), Language: "English"}
		for range turns {
			u := words(30 + r.IntN(40))
			user = append(user, strings.Join(u, " "))
			o.Messages = append(o.Messages, msg{"user", strings.Join(u, " ")}, msg{"assistant", strings.Join(words(50), " ")})
		}
		users = append(users, user)
		recs = append(recs, o)
		if i%4 != 3 {
			continue
		}
		src := r.IntN(len(users))
		srcID := fmt.Sprintf("orig-%03d", src)
		c := rec{ID: fmt.Sprintf("copy-%03d", i), Language: "English"}
		switch kind := i / 4 % 4; kind {
		case 0, 1:
			total := 0
			for _, u := range users[src] {
				total += len(strings.Fields(u))
			}
			edit := kind == 1 && total >= 80
			for k, u := range users[src] {
				if edit && k == 0 {
					w := strings.Fields(u)
					w[len(w)/2] = "changed"
					u = strings.Join(w, " ")
				}
				c.Messages = append(c.Messages, msg{"user", u}, msg{"assistant", "a different answer " + fmt.Sprint(i)})
			}
			near[c.ID] = srcID
		case 2:
			c.Messages = recs[src].Messages
			exact[c.ID] = srcID
		case 3:
			for _, u := range users[src] {
				w := strings.Fields(u)
				for j := range w {
					if j%2 == 0 {
						w[j] = vocab[r.IntN(len(vocab))]
					}
				}
				c.Messages = append(c.Messages, msg{"user", strings.Join(w, " ")}, msg{"assistant", "x"})
			}
			controls[c.ID] = srcID
		}
		recs = append(recs, c)
	}
	path = filepath.Join(dir, "chats.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	for _, rc := range recs {
		if err := enc.Encode(rc); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, near, exact, controls
}

func nearPairs(t *testing.T, l *ledger.Ledger) map[string]ledger.NearPair {
	t.Helper()
	out := map[string]ledger.NearPair{}
	if err := l.EachNearDuplicate(context.Background(), func(p ledger.NearPair) error {
		out[p.DroppedID] = p
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func keptIDs(t *testing.T, l *ledger.Ledger) []string {
	t.Helper()
	var ids []string
	if err := l.EachPage(context.Background(), 500, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			ids = append(ids, s.Conv.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestNearDedupeDropsInjectedCopiesAndKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	in, near, exact, controls := nearInput(t, dir, 400)
	plan := run.Plan{DB: filepath.Join(dir, "run.db"), Ingest: &run.Ingest{Files: []string{in}, Format: "auto", MaxLineBytes: 1 << 20,
		Filter: run.Filter{Dedupe: true, Near: &run.NearDedupe{}}}}
	// The dry run, before the run exists, counts near duplicates too.
	fc, err := run.Estimate(ctx(t), plan)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := run.Execute(ctx(t), plan, run.Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "near_duplicate") || !strings.Contains(log.String(), "--what duplicates") {
		t.Errorf("ingest's summary does not count near duplicates or say where the pairs are:\n%s", log.String())
	}
	l, err := ledger.Open(ctx(t), plan.DB, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pairs := nearPairs(t, l)
	for id, src := range near {
		p, ok := pairs[id]
		switch {
		case !ok:
			t.Errorf("%s, a near copy of %s, was not dropped as a near duplicate", id, src)
		case p.KeptID != src || p.Similarity < filter.DefaultNearThreshold || p.Line == 0:
			t.Errorf("%s matched %s at %.3f (line %d), want %s at 0.8 or more", id, p.KeptID, p.Similarity, p.Line, src)
		}
	}
	if len(pairs) != len(near) {
		t.Errorf("%d near duplicates dropped, %d injected", len(pairs), len(near))
	}
	kept := keptIDs(t, l)
	for id := range controls {
		if !slices.Contains(kept, id) {
			t.Errorf("control %s (half its words changed) was not kept", id)
		}
	}
	for id := range exact {
		if slices.Contains(kept, id) || pairs[id].DroppedID != "" {
			t.Errorf("exact copy %s was kept or counted as a near duplicate", id)
		}
	}
	st, err := l.Status(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped[ledger.DropNearDuplicate] != int64(len(near)) || st.Dropped[ledger.DropDuplicate] != int64(len(exact)) {
		t.Errorf("status counts %v; injected %d near and %d exact", st.Dropped, len(near), len(exact))
	}
	var out strings.Builder
	run.WriteStatus(&out, st, nil, time.Unix(0, 0))
	if first := st.NearDuplicates[0]; !strings.Contains(out.String(), fmt.Sprintf("near duplicates, the first 3 of %d", len(near))) ||
		!strings.Contains(out.String(), first.DroppedID+" (chats.jsonl:") {
		t.Errorf("status does not show the first pairs:\n%s", out.String())
	}
	t.Logf("injected %d near copies, %d exact, %d controls; kept %d; the dry run counted %d", len(near), len(exact), len(controls), st.Conversations, fc.Conversations)
	// The dry run's count of near duplicates is an upper bound: what it
	// keeps is at most what the run kept, and close to it.
	if int64(len(kept)) != st.Conversations || fc.Conversations > st.Conversations || fc.Conversations < st.Conversations*95/100 {
		t.Errorf("dry run counted %d conversations, the run kept %d", fc.Conversations, st.Conversations)
	}
	if !slices.ContainsFunc(fc.Notes, func(n string) bool { return strings.Contains(n, "near duplicates") }) {
		t.Errorf("the dry run's notes do not say how near duplicates were counted: %q", fc.Notes)
	}
}

// The kept set and the pairs depend on the input order only: ingest in
// batches of any size, or stopped after its first commit and run again,
// keeps the same conversations and records the same pairs.
func TestNearDedupeResumesToTheSameDecisions(t *testing.T) {
	dir := t.TempDir()
	in, near, _, _ := nearInput(t, dir, 200)
	n, err := filter.NewNear(filter.NearOptions{})
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, path string) (record.Reader, string, error) {
		return detect.Open(ctx, path, detect.Options{})
	}
	ingestInto := func(name string, batch int, stopFirst bool) ([]string, []string) {
		db := filepath.Join(dir, name)
		opts := ingest.Options{Open: open, Dedupe: true, BatchSize: batch, Settings: "near",
			Near: &ledger.NearDedupe{Sketch: n.Sketch, Similarity: filter.Similarity, Threshold: n.Threshold()}}
		if stopFirst {
			stop := make(chan struct{})
			close(stop)
			opts.Stop = stop
			l, err := ledger.Open(ctx(t), db, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := ingest.Run(ctx(t), l, []string{in}, opts)
			l.Close()
			if err != nil || !sum.Stopped {
				t.Fatalf("the first pass was not stopped (%v)", err)
			}
			opts.Stop = nil
		}
		l, err := ledger.Open(ctx(t), db, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := ingest.Run(ctx(t), l, []string{in}, opts); err != nil {
			t.Fatal(err)
		}
		var pairs []string
		if err := l.EachNearDuplicate(ctx(t), func(p ledger.NearPair) error {
			pairs = append(pairs, fmt.Sprintf("%s>%s@%.4f", p.DroppedID, p.KeptID, p.Similarity))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return keptIDs(t, l), pairs
	}
	wantKept, wantPairs := ingestInto("one.db", 100000, false)
	if len(wantPairs) != len(near) {
		t.Fatalf("%d pairs for %d injected near duplicates", len(wantPairs), len(near))
	}
	for _, tc := range []struct {
		name      string
		batch     int
		stopFirst bool
	}{
		{"batches of 1", 1, false},
		{"batches of 13", 13, false},
		{"stopped after the first batch of 40, resumed", 40, true},
		{"stopped after the first record, resumed", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, pairs := ingestInto(strings.ReplaceAll(tc.name, " ", "-")+".db", tc.batch, tc.stopFirst)
			if !slices.Equal(kept, wantKept) || !slices.Equal(pairs, wantPairs) {
				t.Errorf("kept %d, pairs %d; one batch kept %d with %d pairs\npairs %v\nwant  %v", len(kept), len(pairs), len(wantKept), len(wantPairs), pairs, wantPairs)
			}
		})
	}
}

func TestNearDedupeRefusesShards(t *testing.T) {
	dir := t.TempDir()
	plan := run.Plan{DB: filepath.Join(dir, "run.db"), Shard: shard.Spec{Index: 0, Count: 2},
		Ingest: &run.Ingest{Files: []string{sample}, Format: "auto", MaxLineBytes: 1 << 20, Filter: run.Filter{Dedupe: true, Near: &run.NearDedupe{}}}}
	_, err := run.Execute(ctx(t), plan, run.Options{})
	if err == nil || !strings.Contains(err.Error(), "--dedupe near") || !strings.Contains(err.Error(), "--shard") {
		t.Fatalf("error %v, want one saying near dedupe needs the whole input", err)
	}
	if _, err := os.Stat(plan.DB); !errors.Is(err, os.ErrNotExist) {
		t.Error("the refused plan created the run")
	}
}

func TestNearDedupeSettingsAreChecked(t *testing.T) {
	dir := t.TempDir()
	plan := run.Plan{DB: filepath.Join(dir, "run.db"),
		Ingest: &run.Ingest{Files: []string{sample}, Format: "auto", MaxLineBytes: 1 << 20, Filter: run.Filter{Dedupe: true, Near: &run.NearDedupe{Threshold: 0.2}}}}
	_, err := run.Execute(ctx(t), plan, run.Options{})
	err = run.FilterError(err, map[string]string{"NearThreshold": "--near-threshold"})
	if err == nil || !strings.Contains(err.Error(), "--near-threshold: 0.2") {
		t.Fatalf("error %v, want one naming --near-threshold", err)
	}
}
