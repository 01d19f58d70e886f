//go:build unix

package bench_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// shardEnv sets the conversations BenchmarkShardedRun runs over (default
// shardDefault); AC3_BENCH_SHARD=20000 is a quick run.
const (
	shardEnv     = "AC3_BENCH_SHARD"
	shardDefault = 200_000
	shardCount   = 4
)

// shardExports are the exports both runs write and the benchmark compares
// byte for byte: a merged run must give what one process gives.
var shardExports = []string{"conversations", "annotations", "curated"}

// shardConfig writes the config of the LLM-free run into dir: ingest, the
// heuristic annotators, curation with the six model-free strategies, the
// report and the exports, the run file in dir.
func shardConfig(dir, in string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	body := fmt.Sprintf("run: {db: %s, out: %s}\ninput: {files: [%s]}\nstages:\n  classify: {annotator: heuristic}\n  constraints: {annotator: heuristic}\n  curate: {strategies: [fc, ao, lt, de, concat, filler]}\nreport: {formats: [json, md]}\nexport:\n",
		filepath.Join(dir, "run.db"), filepath.Join(dir, "out"), in)
	for _, k := range shardExports {
		body += fmt.Sprintf("  - {what: %s, format: parquet}\n", k)
	}
	cfg := filepath.Join(dir, "run.yaml")
	return cfg, os.WriteFile(cfg, []byte(body), 0o644)
}

// shardStep is one measured command (or, for the shards, the concurrent
// group of them: wall until the last ends, the highest peak RSS).
type shardStep struct {
	name string
	wall time.Duration
	rss  int64
}

// BenchmarkShardedRun is issue 11's figure: the LLM-free path (ingest,
// heuristic annotators, curation with fc, ao, lt, de, concat and filler,
// report and exports) over the benchmark's synthetic WildChat-shaped
// conversations, once as one `ac3 run` and once as 4 `ac3 run --shard I/4`
// processes at the same time, then `ac3 merge` and `ac3 run` on the merged
// run for the report and exports. Every command runs in its own process; it
// prints the wall times, the merge's cost and peak RSS, and fails if an
// export of the merged run differs from the single process's.
func BenchmarkShardedRun(b *testing.B) {
	n := shardDefault
	if v := os.Getenv(shardEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a number of conversations", shardEnv, v)
		}
	}
	files, err := generatedSizes([]int{n})
	if err != nil {
		b.Fatal(err)
	}
	bin := ac3Binary(b)
	launcher := launcherBinary(b)
	in, err := filepath.Abs(files[n].Path) // the configs are elsewhere
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	single, err := shardConfig(filepath.Join(dir, "single"), in)
	if err != nil {
		b.Fatal(err)
	}
	sharded, err := shardConfig(filepath.Join(dir, "sharded"), in)
	if err != nil {
		b.Fatal(err)
	}
	one, err := measure(launcher, "1 process: ac3 run", bin, "run", "--config", single)
	if err != nil {
		b.Fatal(err)
	}
	steps, err := shardedRun(launcher, bin, sharded)
	if err != nil {
		b.Fatal(err)
	}
	printShards(n, one, steps)
	var total time.Duration
	for _, s := range steps {
		total += s.wall
	}
	b.ReportMetric(one.wall.Seconds(), "single-s")
	b.ReportMetric(total.Seconds(), "sharded-s")
	b.ReportMetric(steps[1].wall.Seconds(), "merge-s")
	b.ReportMetric(float64(steps[1].rss)/mb, "merge-peak-RSS-MB")
	for _, k := range shardExports {
		sameFile(b, filepath.Join(dir, "single", "out", k+".parquet"), filepath.Join(dir, "sharded", "out", k+".parquet"))
	}
}

// shardedRun runs the shards at the same time, then the merge, then the
// config on the merged run.
func shardedRun(launcher, bin, cfg string) ([]shardStep, error) {
	db := filepath.Join(filepath.Dir(cfg), "run.db")
	var (
		wg    sync.WaitGroup
		errs  = make([]error, shardCount)
		rss   = make([]int64, shardCount)
		paths []string
	)
	t0 := time.Now()
	for i := range shardCount {
		paths = append(paths, filepath.Join(filepath.Dir(cfg), fmt.Sprintf("run.shard-%d-of-%d.db", i, shardCount)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := measure(launcher, "shard", bin, "run", "--config", cfg, "--shard", fmt.Sprintf("%d/%d", i, shardCount))
			rss[i], errs[i] = s.rss, err
		}()
	}
	wg.Wait()
	shards := shardStep{name: fmt.Sprintf("%d shards at once: ac3 run --shard I/%d", shardCount, shardCount), wall: time.Since(t0)}
	for i := range shardCount {
		if errs[i] != nil {
			return nil, fmt.Errorf("shard %d: %w", i, errs[i])
		}
		shards.rss = max(shards.rss, rss[i])
	}
	merge, err := measure(launcher, "ac3 merge", bin, append([]string{"merge", "--out", db}, paths...)...)
	if err != nil {
		return nil, err
	}
	finish, err := measure(launcher, "ac3 run on the merged run (report, exports)", bin, "run", "--config", cfg)
	if err != nil {
		return nil, err
	}
	return []shardStep{shards, merge, finish}, nil
}

// measure runs one ac3 command in its own process (see peakRSS).
func measure(launcher, name, bin string, args ...string) (shardStep, error) {
	rss, wall, _, err := peakRSS(launcher, exec.Command(bin, args...))
	if err != nil {
		return shardStep{}, fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(os.Stderr, "bench shard: %s: %.1f s, %.0f MB peak RSS\n", name, wall.Seconds(), float64(rss)/mb)
	return shardStep{name: name, wall: wall, rss: rss}, nil
}

func printShards(n int, one shardStep, steps []shardStep) {
	fmt.Printf("\nthe LLM-free run (ingest, heuristic annotators, 6 strategies, report, 3 exports) over %s conversations: 1 process vs %d shard processes + merge\n", count(n), shardCount)
	w := tabwriter.NewWriter(os.Stdout, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "step\twall\tpeak RSS\t")
	fmt.Fprintf(w, "%s\t%.1f s\t%.0f MB\t\n", one.name, one.wall.Seconds(), float64(one.rss)/mb)
	var total time.Duration
	for _, s := range steps {
		total += s.wall
		fmt.Fprintf(w, "%s\t%.1f s\t%.0f MB\t\n", s.name, s.wall.Seconds(), float64(s.rss)/mb)
	}
	fmt.Fprintf(w, "sharded total\t%.1f s\t\t\n", total.Seconds())
	w.Flush()
	fmt.Printf("speed-up %.2f× on %d cores (the shards share them); the merge is %.0f%% of the sharded wall time\n",
		one.wall.Seconds()/total.Seconds(), runtime.NumCPU(), 100*steps[1].wall.Seconds()/total.Seconds())
}

// sameFile fails b when two files differ.
func sameFile(b *testing.B, want, got string) {
	b.Helper()
	w, err := os.ReadFile(want)
	if err != nil {
		b.Fatal(err)
	}
	g, err := os.ReadFile(got)
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Equal(w, g) {
		b.Errorf("%s of the merged run differs from the single process's (%d vs %d bytes)", filepath.Base(got), len(g), len(w))
	}
}
