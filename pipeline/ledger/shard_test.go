package ledger_test

import (
	"context"
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
