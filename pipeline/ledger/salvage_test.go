package ledger_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
)

func counts(rep ledger.SalvageReport) map[string]ledger.SalvageCount {
	out := map[string]ledger.SalvageCount{}
	for _, c := range rep.Counts {
		out[c.What] = c
	}
	return out
}

func TestSalvageSoundRunCopiesEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := builtRun(t, 120)
	dst := filepath.Join(t.TempDir(), "new.db")
	rep, err := ledger.Salvage(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lost() {
		t.Fatalf("a sound run lost records: %+v", rep)
	}
	c := counts(rep)
	want := map[string]int64{"settings": 1, "inputs": 1, "conversations": 120, "tasks": 240, "units": 720, "cached model answers": 120, "model call records": 120}
	for what, n := range want {
		if c[what].Copied != n {
			t.Errorf("%s copied = %d, want %d", what, c[what].Copied, n)
		}
	}
	// Counting only gives the same figures and writes nothing.
	dry, err := ledger.Salvage(ctx, src, "")
	if err != nil || !reflect.DeepEqual(dry, rep) {
		t.Fatalf("count-only salvage = %+v, %v; want %+v", dry, err, rep)
	}

	a, err := ledger.Open(ctx, src, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ledger.Open(ctx, dst, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sa, err := a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sa.Path, sb.Path = "", ""
	if !reflect.DeepEqual(sa, sb) {
		t.Fatalf("status of the copy differs:\n%+v\n%+v", sa, sb)
	}
	var ua, ub []ledger.Unit
	a.Units(ctx, "curate", testVariants, 0, 1000, func(u ledger.Unit) error { ua = append(ua, u); return nil })
	b.Units(ctx, "curate", testVariants, 0, 1000, func(u ledger.Unit) error { ub = append(ub, u); return nil })
	if len(ua) != 720 || !reflect.DeepEqual(ua, ub) {
		t.Fatalf("units of the copy differ (%d vs %d)", len(ua), len(ub))
	}
	if r, ok, err := b.LLMCache().Get(ctx, fmt.Sprintf("%064x", 60)); err != nil || !ok || r.Text == "" {
		t.Fatalf("cached answer in the copy: %+v %v %v", r, ok, err)
	}
	if _, err := ledger.Salvage(ctx, src, dst); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("salvage onto an existing file: %v", err)
	}
}

func TestSalvageDamagedRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := builtRun(t, 400)
	pageSize, pages, roots := layout(t, src)
	path := filepath.Join(t.TempDir(), "run.db")
	copyFile(t, src, path)
	// Some pages in the middle of the file, whatever they hold, and one
	// leaf of the conversations table, so some conversations are lost.
	overwrite(t, path, pageSize, pages/2, 8)
	overwrite(t, path, pageSize, middleLeaf(t, path, pageSize, roots["conversations"]), 1)

	dst := filepath.Join(t.TempDir(), "new.db")
	rep, err := ledger.Salvage(ctx, path, dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("salvage: %+v", rep.Counts)
	c := counts(rep)
	conv := c["conversations"]
	if conv.Copied == 0 || conv.Lost == 0 || conv.Copied+conv.Lost != 400 || conv.Skipped == 0 {
		t.Fatalf("conversations: %+v; want some copied, some lost, 400 in all", conv)
	}
	if !rep.Lost() {
		t.Fatal("report says nothing was lost")
	}
	// The copy is sound, holds only whole tasks of kept conversations, and
	// a writer can resume on it.
	if res, err := ledger.Check(ctx, dst); err != nil || !res.OK {
		t.Fatalf("check of the recovered run: %+v, %v", res, err)
	}
	l, err := ledger.Open(ctx, dst, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n, err := l.CountConversations(ctx)
	if err != nil || n != conv.Copied {
		t.Fatalf("recovered run has %d conversations, %v; report says %d", n, err, conv.Copied)
	}
	perTask := map[string]int{}
	err = l.EachPage(ctx, 100, func(page []ledger.Stored, after, upto int64) error {
		return l.Units(ctx, "curate", testVariants, after, upto, func(u ledger.Unit) error {
			perTask[fmt.Sprint(u.ConvSeq, u.Variant)]++
			return nil
		})
	})
	if err != nil {
		t.Fatalf("reading the recovered run: %v", err)
	}
	if int64(len(perTask)) != c["tasks"].Copied {
		t.Fatalf("%d tasks have units, report says %d tasks copied", len(perTask), c["tasks"].Copied)
	}
	for k, u := range perTask {
		if u != 3 {
			t.Fatalf("task %s has %d units, want all 3", k, u)
		}
	}
	prog, err := l.Progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prog {
		if p.Done+p.Failed+p.Pending != n {
			t.Fatalf("progress %+v does not add up to %d conversations", p, n)
		}
	}
}

func TestSalvageUnreadableUnits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := builtRun(t, 100)
	pageSize, _, roots := layout(t, src)
	path := filepath.Join(t.TempDir(), "run.db")
	copyFile(t, src, path)
	overwrite(t, path, pageSize, roots["units"], 1)
	rep, err := ledger.Salvage(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	c := counts(rep)
	// Every task's units are unreadable: the tasks are left to be redone;
	// the conversations and the cache (so redoing costs nothing) survive.
	if c["tasks"].Copied != 0 || c["tasks"].Lost != 200 || c["conversations"].Copied != 100 || c["cached model answers"].Copied != 100 {
		t.Fatalf("salvage with the units unreadable: %+v", rep)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("a count-only salvage wrote to the damaged file")
	}
}

func TestSalvageSkipsADamagedLeafOfTextKeys(t *testing.T) {
	// Cached answers are found by their key (hex text) through an index
	// beside the rows (migration 0008). Damage in the index makes salvage
	// probe past it by key, and neither the keys nor the count can be read
	// past it: the loss is unknown (-1). Damage among the rows loses just
	// those answers, and the intact index counts them.
	for _, c := range []struct {
		name, tree string
		check      func(c ledger.SalvageCount) bool
	}{
		{"key index", "sqlite_autoindex_llm_cache_1", func(c ledger.SalvageCount) bool {
			// A leaf of the index holds some 55 keys: those are lost, and
			// the probe may step over a few more.
			return c.Skipped > 0 && c.Lost == -1 && c.Copied >= 225 && c.Copied < 300
		}},
		{"rows", "llm_cache", func(c ledger.SalvageCount) bool {
			return c.Lost > 0 && c.Copied+c.Lost == 300 && c.Copied >= 250
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			src := builtRun(t, 300)
			pageSize, _, roots := layout(t, src)
			root, ok := roots[c.tree]
			if !ok {
				t.Fatalf("no tree %s in the run file", c.tree)
			}
			path := filepath.Join(t.TempDir(), "run.db")
			copyFile(t, src, path)
			overwrite(t, path, pageSize, middleLeaf(t, path, pageSize, root), 1)
			rep, err := ledger.Salvage(ctx, path, filepath.Join(t.TempDir(), "new.db"))
			if err != nil {
				t.Fatal(err)
			}
			if cache := counts(rep)["cached model answers"]; !c.check(cache) {
				t.Fatalf("cached answers with one leaf of %s damaged: %+v", c.tree, cache)
			}
			if c := counts(rep)["conversations"]; c.Copied != 300 {
				t.Fatalf("conversations: %+v", c)
			}
		})
	}
}
