package ledger_test

import (
	"fmt"

	"context"
	"github.com/ac3/ac3/pipeline/conv"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
)

func TestShardIdentitySurvivesSalvage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "r.shard-1-of-3.db"), filepath.Join(dir, "saved.db")
	l, err := ledger.Open(ctx, src, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.ShardInfo{Index: 1, Count: 3, Scheme: "test"}
	if err := l.SetShard(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := l.SetShard(ctx, ledger.ShardInfo{Index: 2, Count: 3, Scheme: "test"}); err == nil {
		t.Error("a recorded shard was changed")
	}
	if err := l.SetShardStep(ctx, "ingest", "f1"); err != nil {
		t.Fatal(err)
	}
	if err := l.SetShardStep(ctx, "ingest", "f2"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := ledger.Salvage(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	s, err := ledger.Open(ctx, dst, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, ok, err := s.Shard(ctx)
	if err != nil || !ok || got != want {
		t.Errorf("salvaged shard = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	steps, err := s.ShardSteps(ctx)
	if err != nil || len(steps) != 1 || steps["ingest"] != "f2" {
		t.Errorf("salvaged steps = %v, %v; want ingest f2", steps, err)
	}
}

// TestMergeDerivedConversations: conversations a step derived in a shard
// keep their parents across the merge, after the ingested ones, and a
// shard that derived nothing (so lacks the derived input) still merges.
func TestMergeDerivedConversations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ids := [][]string{{"a", "c", "e"}, {"b", "d"}} // shard 0, shard 1; input order a..e
	lines := map[string]int64{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
	var paths []string
	for k, own := range ids {
		p := filepath.Join(dir, fmt.Sprintf("r.shard-%d-of-2.db", k))
		paths = append(paths, p)
		l, err := ledger.Open(ctx, p, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SetShard(ctx, ledger.ShardInfo{Index: k, Count: 2, Scheme: "test"}); err != nil {
			t.Fatal(err)
		}
		in, err := l.AddInput(ctx, ledger.Input{Path: "/dump.jsonl", Format: "wildchat", Size: 9})
		if err != nil {
			t.Fatal(err)
		}
		var kept []*conv.Conversation
		for _, id := range own {
			kept = append(kept, &conv.Conversation{ID: id, Format: "wildchat", Source: conv.Source{File: "/dump.jsonl", Line: lines[id]},
				Messages: []conv.Message{{Role: conv.User, Content: "q " + id}, {Role: conv.Assistant, Content: "a " + id}}})
		}
		if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Kept: kept, RecordsDone: 5, Finished: true}); err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			// Derived from c (seq 2 in this shard) and a (seq 1).
			_, err := l.AddDerived(ctx, "sim", func(yield func(int64, *conv.Conversation) bool) {
				for _, x := range []struct {
					parent int64
					id     string
				}{{2, "c/sim"}, {1, "a/sim"}} {
					c := &conv.Conversation{ID: x.id, Messages: []conv.Message{{Role: conv.User, Content: "q " + x.id}}}
					if !yield(x.parent, c) {
						return
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
	}
	out := filepath.Join(dir, "merged.db")
	rep, err := ledger.Merge(ctx, out, paths, ledger.MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Conversations != 7 {
		t.Errorf("merged %d conversations, want 7", rep.Conversations)
	}
	l, err := ledger.Open(ctx, out, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var got []string
	bySeq := map[int64]string{}
	err = l.EachPage(ctx, 100, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			bySeq[s.Seq] = s.Conv.ID
			p := ""
			if s.Parent != 0 {
				p = "<" + bySeq[s.Parent]
			}
			got = append(got, fmt.Sprintf("%d:%s%s", s.Seq, s.Conv.ID, p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "[1:a 2:b 3:c 4:d 5:e 6:a/sim<a 7:c/sim<c]"
	if fmt.Sprint(got) != want {
		t.Errorf("merged conversations %v, want %s", got, want)
	}
	info, ok, err := l.Shard(ctx)
	if err != nil || !ok || !info.Merged() || info.Count != 2 {
		t.Errorf("merged run's shard = %+v, %v, %v", info, ok, err)
	}
}
