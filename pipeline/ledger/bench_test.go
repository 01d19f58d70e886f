//go:build unix

package ledger_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/ledger/pagesum"
)

// The resume benchmarks run over one generated run of -bench-convs
// conversations (default 200,000) with benchTurns units each in one
// finished stage variant: 1,000,000 finished units, as issue 9's target
// states ("resume scan of a run with 1M finished units ≤ 10 s"). About one
// unit in a thousand failed. The run is generated once (about 1.5 GB; it
// takes minutes) and kept in the system's temp folder under a name that
// says its shape and generator version, for later benchmark runs.
var benchConvs = flag.Int("bench-convs", 200_000, "conversations in the generated run of the resume benchmarks")

const (
	benchTurns = 5
	benchGen   = "v1" // bump when generateRun's output changes
)

var benchRun = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(os.TempDir(), "ac3-ledger-bench-"+benchGen)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("resume-%d-%d.db", *benchConvs, benchTurns))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	start := time.Now()
	tmp := path + ".partial"
	for _, suffix := range []string{"", "-wal", "-shm", ledger.LockSuffix} {
		os.Remove(tmp + suffix)
	}
	if err := generateRun(context.Background(), tmp, *benchConvs, benchTurns); err != nil {
		return "", err
	}
	os.Remove(tmp + ledger.LockSuffix)
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	st, _ := os.Stat(path)
	fmt.Fprintf(os.Stderr, "bench: generated %d conversations, %d units, %.0f MB in %s into %s\n", *benchConvs, *benchConvs*benchTurns, float64(st.Size())/1e6, time.Since(start).Round(time.Second), path)
	return path, nil
})

var benchVariant = ledger.Variant{Name: "fc", Version: "v1"}

// benchConversation is WildChat-shaped: benchTurns rounds, short questions,
// long answers with numbers in them, and a metadata object, so a stored blob
// is a few KB compressed like a real one.
func benchConversation(rng *rand.Rand, i int) *conv.Conversation {
	words := strings.Fields("the a of to and in is it that for on with as this be are by function code error python value list file data model result number table query loop string return class method test output input example please can you explain why how")
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(6) == 0 {
				fmt.Fprintf(&b, " %d", rng.IntN(100000))
			}
			b.WriteByte(' ')
		}
		return b.String()
	}
	c := &conv.Conversation{ID: fmt.Sprintf("%032x", rng.Uint64()) + fmt.Sprint(i), Format: "wildchat", Language: "English",
		Source: conv.Source{File: "/data/wildchat/train-00001.parquet", Row: int64(i)}}
	for range benchTurns {
		c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: text(20 + rng.IntN(60))}, conv.Message{Role: conv.Assistant, Content: text(150 + rng.IntN(400))})
	}
	meta := map[string]any{"model": "gpt-4-0314", "timestamp": "2023-04-09T00:02:53Z", "country": "United States", "hashed_ip": fmt.Sprintf("%064x", rng.Uint64()),
		"openai_moderation": []map[string]float64{{"harassment": rng.Float64(), "hate": rng.Float64(), "self-harm": rng.Float64(), "sexual": rng.Float64(), "violence": rng.Float64()}}}
	c.Meta, _ = json.Marshal(meta)
	return c
}

// generateRun ingests convs conversations and commits one finished stage
// variant with turns units each, in batches as the engine would.
func generateRun(ctx context.Context, path string, convs, turns int) error {
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	in, err := l.AddInput(ctx, ledger.Input{Path: "/data/wildchat", Format: "wildchat"})
	if err != nil {
		return err
	}
	if err := l.SetPlan(ctx, "curate", []ledger.Variant{benchVariant}); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const batch = 2000
	for start := 0; start < convs; start += batch {
		kept := make([]*conv.Conversation, 0, batch)
		for i := start; i < min(start+batch, convs); i++ {
			kept = append(kept, benchConversation(rng, i))
		}
		if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, RecordsDone: int64(start + len(kept)), Finished: start+batch >= convs, Kept: kept}); err != nil {
			return err
		}
		tasks := make([]ledger.TaskResult, 0, len(kept))
		for i, c := range kept {
			seq := int64(start + i + 1)
			t := ledger.TaskResult{TaskID: ledger.TaskID{Stage: "curate", Variant: benchVariant.Name, Version: benchVariant.Version, ConvSeq: seq}, ConvID: c.ID, Status: ledger.Done, Attempts: 1}
			for turn := 1; turn <= turns; turn++ {
				u := ledger.UnitResult{Turn: turn, Status: ledger.Done, Attempts: 1, Tokens: 700, Output: []byte(fmt.Sprintf(`{"messages":%d,"tokens":%d,"ref":"%s/%d"}`, 2*turn-1, 700, c.ID, turn))}
				if rng.IntN(1000) == 0 {
					u = ledger.UnitResult{Turn: turn, Status: ledger.Failed, Attempts: 3, Error: fmt.Sprintf("parsing model answer (3 tries): invalid character '%c' at offset %d", 'a'+rune(rng.IntN(26)), rng.IntN(500))}
					t.Status, t.Error = ledger.Failed, fmt.Sprintf("turn %d: %s", turn, u.Error)
				}
				t.Units = append(t.Units, u)
			}
			tasks = append(tasks, t)
		}
		if err := l.CommitTasks(ctx, tasks); err != nil {
			return err
		}
	}
	return l.Close()
}

func openBenchRun(b *testing.B) *ledger.Ledger {
	b.Helper()
	path, err := benchRun()
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

// BenchmarkResumeScan is the engine planner's scan of a finished run: every
// page of conversations with the task states of its seq range (what plan in
// pipeline/engine.go does), finding nothing pending.
func BenchmarkResumeScan(b *testing.B) {
	ctx := context.Background()
	l := openBenchRun(b)
	variants := []ledger.Variant{benchVariant}
	b.ResetTimer()
	for b.Loop() {
		start, cpu := time.Now(), cpuTime()
		var convs, pending int
		err := l.EachPage(ctx, 512, func(page []ledger.Stored, after, upto int64) error {
			states, err := l.TaskStates(ctx, "curate", variants, after, upto)
			if err != nil {
				return err
			}
			for _, sc := range page {
				convs++
				if _, ok := states[ledger.TaskID{Stage: "curate", Variant: benchVariant.Name, Version: benchVariant.Version, ConvSeq: sc.Seq}]; !ok {
					pending++
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if convs != *benchConvs || pending != 0 {
			b.Fatalf("scanned %d conversations, %d pending", convs, pending)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/scan")
		b.ReportMetric(cpuTime()-cpu, "cpu-s/scan")
	}
}

// BenchmarkResumePending is the same scan through EachPending, which
// decodes only pending conversations (none here).
func BenchmarkResumePending(b *testing.B) {
	ctx := context.Background()
	l := openBenchRun(b)
	b.ResetTimer()
	for b.Loop() {
		start, cpu := time.Now(), cpuTime()
		var pending int
		err := l.EachPending(ctx, "curate", []ledger.Variant{benchVariant}, 512, func(page []ledger.Pending) error {
			pending += len(page)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if pending != 0 {
			b.Fatalf("%d pending", pending)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/scan")
		b.ReportMetric(cpuTime()-cpu, "cpu-s/scan")
	}
}

// cpuTime is the process's user and system CPU seconds so far: on a shared
// machine it says what a benchmark cost better than the wall clock.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// doneStage is a stage whose every task is recorded: running it is the
// engine's resume path with nothing left to do but one conversation.
type doneStage struct{}

func (doneStage) Name() string { return "curate" }
func (doneStage) Variants() []pipeline.Variant {
	return []pipeline.Variant{pipeline.Variant(benchVariant)}
}
func (doneStage) Process(_ context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	return []pipeline.Result{{Variant: t.Variants[0], Units: []pipeline.Unit{{Turn: 1}}}}, nil
}

// BenchmarkResumeEngine resumes the finished run through pipeline.Run with
// one more conversation added at the end, so the real planner scans the
// whole run to find the one pending task.
func BenchmarkResumeEngine(b *testing.B) {
	ctx := context.Background()
	src, err := benchRun()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "resume.db")
		copyFile(b, src, path)
		l, err := ledger.Open(ctx, path, ledger.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := ingestN(ctx, l, "/more.jsonl", 1); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start, cpu := time.Now(), cpuTime()
		sum, err := pipeline.Run(ctx, l, doneStage{}, pipeline.Options{Workers: 2})
		if err != nil {
			b.Fatal(err)
		}
		if sum.Planned != 1 || sum.Done != 1 {
			b.Fatalf("resume planned %d, did %d; want the one new conversation", sum.Planned, sum.Done)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/resume")
		b.ReportMetric(cpuTime()-cpu, "cpu-s/resume")
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
}

// BenchmarkTaskCounts is what `curate` asks before planning (pipeline.Pending).
func BenchmarkTaskCounts(b *testing.B) {
	ctx := context.Background()
	l := openBenchRun(b)
	b.ResetTimer()
	for b.Loop() {
		n, err := l.CountConversations(ctx)
		if err != nil {
			b.Fatal(err)
		}
		done, failed, err := l.TaskCounts(ctx, "curate", benchVariant)
		if err != nil || n != int64(*benchConvs) || done+failed != int64(*benchConvs) {
			b.Fatalf("counts %d %d %d, %v", n, done, failed, err)
		}
	}
}

// BenchmarkProgress is the per-stage progress query status and the report
// show, over the 1M-unit run.
func BenchmarkProgress(b *testing.B) {
	ctx := context.Background()
	l := openBenchRun(b)
	b.ResetTimer()
	for b.Loop() {
		st, err := l.Progress(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(st) != 1 || st[0].UnitsDone+st[0].UnitsFailed != int64(*benchConvs*benchTurns) || len(st[0].Failures) != 1 {
			b.Fatalf("progress = %+v", st)
		}
	}
}

// BenchmarkCheck is SQLite's full integrity check (what `ac3 doctor` runs)
// over the run file, with its throughput: the cost a check on every open
// would add.
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	path, err := benchRun()
	if err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	b.ResetTimer()
	for b.Loop() {
		start, cpu := time.Now(), cpuTime()
		res, err := ledger.Check(ctx, path)
		if err != nil || !res.OK {
			b.Fatalf("check = %+v, %v", res, err)
		}
		b.ReportMetric(float64(st.Size())/1e6/time.Since(start).Seconds(), "MB/s")
		b.ReportMetric(float64(st.Size())/1e6/(cpuTime()-cpu), "MB/cpu-s")
	}
}

// BenchmarkQuickCheck is SQLite's lighter quick_check(1), which still reads
// every page; the figure shows why Open does not run it.
func BenchmarkQuickCheck(b *testing.B) {
	path, err := benchRun()
	if err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ResetTimer()
	for b.Loop() {
		start, cpu := time.Now(), cpuTime()
		var res string
		if err := db.QueryRow("PRAGMA quick_check(1)").Scan(&res); err != nil || res != "ok" {
			b.Fatalf("quick_check = %q, %v", res, err)
		}
		b.ReportMetric(float64(st.Size())/1e6/time.Since(start).Seconds(), "MB/s")
		b.ReportMetric(float64(st.Size())/1e6/(cpuTime()-cpu), "MB/cpu-s")
	}
}

// BenchmarkPageChecksums reads every page of every unit of the bench run
// (the last byte of each output, which makes SQLite read its overflow
// pages too), as an export does, through the checksum VFS with the checks
// on and with them off (pagesum.VerifyParam), in alternating pairs so both
// see the same machine, and reports the median of the pairs' ratios: what
// checking every page read costs.
func BenchmarkPageChecksums(b *testing.B) {
	path, err := benchRun()
	if err != nil {
		b.Fatal(err)
	}
	read := func(verify bool) (time.Duration, int64) {
		v := "1"
		if !verify {
			v = "0"
		}
		db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&"+pagesum.VerifyParam+"="+v)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		start := time.Now()
		var n, last int64
		if err := db.QueryRow(`SELECT count(*), sum(unicode(substr(output, -1))) FROM units`).Scan(&n, &last); err != nil {
			b.Fatal(err)
		}
		return time.Since(start), n
	}
	read(true) // warm the OS cache
	var ratios []float64
	var on, off time.Duration
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always meets a cache the
		// other warmed.
		var d1, d2 time.Duration
		var n1, n2 int64
		if i%2 == 0 {
			d1, n1 = read(true)
			d2, n2 = read(false)
		} else {
			d2, n2 = read(false)
			d1, n1 = read(true)
		}
		if n1 != n2 || n1 == 0 {
			b.Fatalf("read %d units checked, %d unchecked", n1, n2)
		}
		on, off = on+d1, off+d2
		ratios = append(ratios, d1.Seconds()/d2.Seconds())
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "median-checked/unchecked")
	b.ReportMetric(on.Seconds()/float64(b.N), "s/checked-read")
	b.ReportMetric(off.Seconds()/float64(b.N), "s/unchecked-read")
}
