//go:build unix

package ledger_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// The scoped benchmarks run over the resume benchmarks' run with derived
// conversations added: one "sim" trajectory per benchDerivedEvery-th
// ingested conversation (10,000 of the default 200,000), each with a done
// curate task of benchTurns units, as if curate had run over every origin.
// The file is a copy of the resume run, migrated (the migration's time is
// printed: it is what opening an existing run costs once) and kept beside
// it.
const benchDerivedEvery = 20

var benchScopedRun = sync.OnceValues(func() (string, error) {
	src, err := benchRun()
	if err != nil {
		return "", err
	}
	path := filepath.Join(filepath.Dir(src), fmt.Sprintf("scoped-%d-%d-every%d.db", *benchConvs, benchTurns, benchDerivedEvery))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp := path + ".partial"
	for _, suffix := range []string{"", "-wal", "-shm", ledger.LockSuffix} {
		os.Remove(tmp + suffix)
	}
	if err := copyPlain(src, tmp); err != nil {
		return "", err
	}
	ctx := context.Background()
	start := time.Now()
	l, err := ledger.Open(ctx, tmp, ledger.Options{})
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "bench: opening the %d-conversation run for writing (migrating it if it is older) took %s\n", *benchConvs, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	var derived []int64
	_, err = l.AddDerived(ctx, "sim", func(yield func(int64, *conv.Conversation) bool) {
		for p := int64(benchDerivedEvery); p <= int64(*benchConvs); p += benchDerivedEvery {
			c := &conv.Conversation{ID: fmt.Sprintf("sim-%d", p), Format: "sim"}
			for turn := range benchTurns {
				c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: fmt.Sprintf("shard %d of task %d", turn, p)}, conv.Message{Role: conv.Assistant, Content: "an answer of some length, as a simulated respondent would write it"})
			}
			if !yield(p, c) {
				return
			}
		}
	})
	if err != nil {
		l.Close()
		return "", err
	}
	if err := l.In(ledger.MustOrigins("sim")).EachPage(ctx, 2000, func(page []ledger.Stored, _, _ int64) error {
		tasks := make([]ledger.TaskResult, 0, len(page))
		for _, s := range page {
			derived = append(derived, s.Seq)
			t := ledger.TaskResult{TaskID: ledger.TaskID{Stage: "curate", Variant: benchVariant.Name, Version: benchVariant.Version, ConvSeq: s.Seq}, ConvID: s.Conv.ID, Status: ledger.Done, Attempts: 1}
			for turn := 1; turn <= benchTurns; turn++ {
				t.Units = append(t.Units, ledger.UnitResult{Turn: turn, Status: ledger.Done, Attempts: 1, Tokens: 700, Output: []byte(`{"messages":1}`)})
			}
			tasks = append(tasks, t)
		}
		return l.CommitTasks(ctx, tasks)
	}); err != nil {
		l.Close()
		return "", err
	}
	if err := l.Close(); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "bench: derived %d conversations with their tasks in %s\n", len(derived), time.Since(start).Round(time.Millisecond))
	os.Remove(tmp + ledger.LockSuffix)
	return path, os.Rename(tmp, path)
})

func copyPlain(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func openScopedRun(b *testing.B) *ledger.Ledger {
	b.Helper()
	path, err := benchScopedRun()
	if err != nil {
		b.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), path, ledger.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

var (
	benchSource  = ledger.MustOrigins(ledger.OriginSource)
	benchDerived = ledger.MustOrigins("sim")
)

func benchSims() int64 { return int64(*benchConvs / benchDerivedEvery) }

// BenchmarkScopedResumePending is the planner's scan of the finished run
// with derived conversations, over every origin and over each one, finding
// nothing pending.
func BenchmarkScopedResumePending(b *testing.B) {
	ctx := context.Background()
	l := openScopedRun(b)
	for _, c := range []struct {
		name  string
		scope ledger.Scope
	}{{"all", ledger.AllOrigins}, {"source", benchSource}, {"derived", benchDerived}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				start, cpu := time.Now(), cpuTime()
				var pending int
				err := l.In(c.scope).EachPending(ctx, "curate", []ledger.Variant{benchVariant}, 512, func(page []ledger.Pending) error {
					pending += len(page)
					return nil
				})
				if err != nil || pending != 0 {
					b.Fatalf("%d pending, %v", pending, err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/scan")
				b.ReportMetric(cpuTime()-cpu, "cpu-s/scan")
			}
		})
	}
}

// BenchmarkScopedTaskCounts is what pipeline.Pending asks before planning a
// scoped stage: the scope's conversations and its task counts.
func BenchmarkScopedTaskCounts(b *testing.B) {
	ctx := context.Background()
	l := openScopedRun(b)
	all := int64(*benchConvs) + benchSims()
	for _, c := range []struct {
		name  string
		scope ledger.Scope
		n     int64
	}{{"all", ledger.AllOrigins, all}, {"source", benchSource, int64(*benchConvs)}, {"derived", benchDerived, benchSims()}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				v := l.In(c.scope)
				n, err := v.CountConversations(ctx)
				if err != nil {
					b.Fatal(err)
				}
				done, failed, err := v.TaskCounts(ctx, "curate", benchVariant)
				if err != nil || n != c.n || done+failed != c.n {
					b.Fatalf("counts %d %d %d, %v; want %d", n, done, failed, err, c.n)
				}
			}
		})
	}
}

// BenchmarkScopedProgress is status's per-stage progress over the run with
// derived conversations, with the stage's recorded scope every origin and
// each one. A scope that leaves out conversations the stage has tasks for
// takes the slower path that counts units per conversation of the scope.
func BenchmarkScopedProgress(b *testing.B) {
	ctx := context.Background()
	path, err := benchScopedRun()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		scope ledger.Scope
		n     int64
	}{{"all", ledger.AllOrigins, int64(*benchConvs) + benchSims()}, {"source", benchSource, int64(*benchConvs)}, {"derived", benchDerived, benchSims()}} {
		b.Run(c.name, func(b *testing.B) {
			b.StopTimer()
			w, err := ledger.Open(ctx, path, ledger.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := w.SetScope(ctx, "curate", c.scope); err != nil {
				b.Fatal(err)
			}
			w.Close()
			l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.StartTimer()
			for b.Loop() {
				st, err := l.Progress(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(st) != 1 || st[0].Done+st[0].Failed != c.n || st[0].Pending != 0 || st[0].UnitsDone+st[0].UnitsFailed != c.n*benchTurns {
					b.Fatalf("progress = %+v", st)
				}
			}
		})
	}
}
