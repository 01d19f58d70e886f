//go:build unix

package bench_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ac3/ac3/run/export"
)

// scaleEnv lists the sizes BenchmarkScale runs, as comma-separated
// conversation counts (e.g. AC3_BENCH_SCALE=10000,100000); by default
// defaultScale.
const scaleEnv = "AC3_BENCH_SCALE"

// keepEnv names a directory in which BenchmarkScale keeps each size's run
// file, report and exports (in a subdirectory per size) instead of
// deleting them: a run that lasts hours can then be inspected, or a command
// measured again, without redoing it.
const keepEnv = "AC3_BENCH_KEEP"

// sideEnv sets the smallest size whose governed and off runs are made side
// by side (see measureSideBySide) instead of in alternating pairs
// (measureGoverned): a conversation count, or "off" for none; by default
// defaultSideBySide.
const sideEnv = "AC3_BENCH_SIDE_BY_SIDE"

// defaultSideBySide: a million conversations side by side takes about two
// hours on a 2-core machine, in alternating pairs about six.
const defaultSideBySide = 1_000_000

// sideBySideFrom reads sideEnv: the smallest size measured side by side,
// or 0 for none.
func sideBySideFrom() (int, error) {
	v := strings.TrimSpace(os.Getenv(sideEnv))
	switch v {
	case "":
		return defaultSideBySide, nil
	case "off":
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a conversation count or off", sideEnv, v)
	}
	return n, nil
}

// defaultScale is the sizes of issue 9: 10k, 100k and a million
// conversations.
var defaultScale = []int{10_000, 100_000, 1_000_000}

// Targets of issue 9 for every command: peak RSS at the largest size at most
// 1.1× the smallest's, and never above 1 GiB.
const (
	maxRSSGrowth = 1.1
	maxRSSBytes  = 1 << 30
)

func scaleSizes() ([]int, error) {
	v := os.Getenv(scaleEnv)
	if v == "" {
		return defaultScale, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q: want comma-separated conversation counts", scaleEnv, v)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// generatedSizes writes, or finds from an earlier run, a WildChat-like file
// of each size: the first n records of the one seeded stream (so the 10k
// file is the one BenchmarkRSS reads).
func generatedSizes(sizes []int) (map[int]genFile, error) {
	dir := filepath.Join("testdata", "generated")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("making %s: %w", dir, err)
	}
	out := map[int]genFile{}
	var missing []int
	for _, n := range sizes {
		p := filepath.Join(dir, fmt.Sprintf("wildchat-%s-seed%d-%d.jsonl.zst", genVersion, genSeed, n))
		if m, err := readMeta(p); err == nil {
			out[n] = genFile{Path: p, genMeta: m}
			continue
		}
		out[n] = genFile{Path: p}
		missing = append(missing, n)
	}
	if len(missing) == 0 {
		return out, nil
	}
	largest := slices.Max(missing)
	fmt.Fprintf(os.Stderr, "bench: generating %d conversations into %s (once; cached)\n", largest, dir)
	ws := make([]*zfile, len(missing))
	for i, n := range missing {
		z, err := createZ(out[n].Path)
		if err != nil {
			return nil, err
		}
		defer z.abort()
		ws[i] = z
	}
	g := newGen(genSeed)
	var line []byte
	for i := range largest {
		line = g.conversation(line[:0], i)
		line = append(line, '\n')
		for k, z := range ws {
			if i >= missing[k] {
				continue
			}
			if _, err := z.Write(line); err != nil {
				return nil, fmt.Errorf("writing %s: %w", z.path, err)
			}
		}
	}
	for k, z := range ws {
		n := missing[k]
		m, err := z.finish(out[n].Path, n)
		if err != nil {
			return nil, err
		}
		out[n] = genFile{Path: out[n].Path, genMeta: m}
	}
	return out, nil
}

// firstID is the conversation id of the first record of a generated file.
func firstID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	line, err := bufio.NewReaderSize(zr, 1<<20).ReadBytes('\n')
	if err != nil {
		return "", fmt.Errorf("reading the first record of %s: %w", path, err)
	}
	var rec struct {
		Hash string `json:"conversation_hash"`
	}
	if err := json.Unmarshal(line, &rec); err != nil || rec.Hash == "" {
		return "", fmt.Errorf("no conversation_hash in the first record of %s: %v", path, err)
	}
	return rec.Hash, nil
}

// scaleStep is one command of the scale run.
type scaleStep struct {
	name string
	args []string
	want string // in its output, when set
	// reads: the step leaves the run file as it is, so a quick one can be
	// measured more than once with its own arguments.
	reads bool
	// again, when set, is a run of the same command that leaves the run
	// file as it is (ingest into a scratch file).
	again []string
	// scratch is removed after each run of again.
	scratch string
	// env, when set, is the command's environment; this process's when
	// nil.
	env []string
}

// command is the step's command running args.
func (st scaleStep) command(bin string, args []string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = st.env
	return cmd
}

// rerun is the command that measures the step again without changing the
// run; nil when there is none.
func (st scaleStep) rerun() []string {
	if st.again == nil && st.reads {
		return st.args
	}
	return st.again
}

// quickStep is how long a step may take for the benchmark to run it
// quickRuns times and take the median peak: a command that ends within
// seconds reaches its steady state in some runs and not in others (ingest
// of 10k conversations peaked between 73 and 80 MB over runs of one
// binary), and the smallest size is the denominator of every growth figure.
const (
	quickStep = 30 * time.Second
	quickRuns = 3
)

// scaleSteps is the run of issue 9's memory benchmark on one run file:
// ingest, the heuristic annotators, curation with the six model-free
// strategies, then every command that reads the run.
func scaleSteps(dir, in string, n int, id string) ([]scaleStep, error) {
	db := filepath.Join(dir, "run.db")
	cfg := filepath.Join(dir, "run.yaml")
	// The config's relative paths are taken from its own folder.
	abs, err := filepath.Abs(in)
	if err != nil {
		return nil, err
	}
	body := fmt.Sprintf("run: {db: %s, out: %s}\ninput: {files: [%s]}\nstages:\n  classify: {annotator: heuristic}\n  constraints: {annotator: heuristic}\n  curate: {strategies: [fc, ao, lt, de, concat, filler]}\n",
		db, filepath.Join(dir, "out"), abs)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return nil, err
	}
	steps := []scaleStep{
		{name: "ingest", args: []string{"ingest", "--db", db, in}, want: fmt.Sprintf("kept %d conversations", n),
			again: []string{"ingest", "--db", filepath.Join(dir, "scratch.db"), in}, scratch: filepath.Join(dir, "scratch.db")},
		{name: "annotate (heuristic)", args: []string{"annotate", "--db", db, "--stages", "classify,constraints", "--annotator", "heuristic"}},
		// The dry run a user makes before paying for a stage: curate is
		// all to do, so it reads every conversation and estimates it.
		{name: "run --dry-run (before curate)", args: []string{"run", "--config", cfg, "--dry-run"}, want: "curate", reads: true},
		{name: "curate (6 strategies)", args: []string{"curate", "--db", db, "--strategies", "fc,ao,lt,de,concat,filler"}},
	}
	// Every step after curate reads the run.
	readers := []scaleStep{
		// Issue 9's resume scan: the same curate again, over a run whose
		// units (about 7 curate units a conversation) are all recorded, must find
		// nothing to do, quickly (target at a million units: 10 s).
		{name: "curate again (resume scan)", args: []string{"curate", "--db", db, "--strategies", "fc,ao,lt,de,concat,filler"}, want: "nothing to do"},
		{name: "status", args: []string{"status", "--db", db}},
		{name: "inspect", args: []string{"inspect", "--db", db, "--conversation", id, "--turn", "2"}},
		// On the finished run it counts from the task tables.
		{name: "run --dry-run (finished)", args: []string{"run", "--config", cfg, "--dry-run"}},
		{name: "report", args: []string{"report", "--db", db, "--out", filepath.Join(dir, "report")}},
	}
	for _, k := range export.Kinds() {
		if k == export.KindPreferences || k == export.KindWinners {
			continue // they read judge verdicts, which a model-free run has none of
		}
		readers = append(readers, scaleStep{name: "export " + k, args: []string{"export", "--db", db, "--what", k, "--format", "parquet", "--out", filepath.Join(dir, k+".parquet")}})
	}
	for i := range readers {
		readers[i].reads = true
	}
	return append(steps, readers...), nil
}

type scaleFigure struct {
	rss       int64
	wall, cpu time.Duration
	// Measured in the governed comparison only (see measureGoverned).
	sys, gc time.Duration
	gcs     int
	minflt  int64
}

// BenchmarkScale is issue 9's memory figure: every command of a heuristic
// run (ingest, annotate, curate with fc, ao, lt, de, concat and filler,
// status, inspect, the dry run, report and every export but preferences and
// winners, which need judge verdicts) over synthetic
// WildChat-shaped data at 10k, 100k and 1M conversations (AC3_BENCH_SCALE
// changes the sizes), each command in its own process, printing its wall
// time and peak RSS at each size. Targets: at the largest size a command's
// peak RSS is at most 1.1× its peak at the smallest, and never above 1 GiB.
// Each step also runs with --memory-limit off: a second table prints both
// columns (wall, CPU, the collector's CPU, system time, peak RSS), and a
// step whose governor costs more than maxGovernCost-1 of its time fails
// (issue 28; see governErrors). Below a million conversations
// (AC3_BENCH_SIDE_BY_SIDE moves the line) the two run in turn on the one
// run (see measureGoverned): a step that ends within quickStep is run
// governPairs times each way, alternating, a longer one longPairs times,
// and the medians taken. This makes the benchmark five times as long, and a
// step that writes to the run (annotate, curate) needs a second copy of the
// run file on disk while it is measured. From a million on, the two sides
// are two runs made at once, each on its own run file, both sides of each
// step started together (see measureSideBySide): one pair a long step, and
// a pass takes about what one sequential pass takes.
//
// The million-conversation run takes about an hour of commands a pass on a
// small machine (2 cores); side by side, both passes together take about
// two hours, plus generating its input (about 6 minutes), and about 40 GB
// of disk: the input 3.7 GB (kept under testdata/generated), and each
// side's run file 11.5 GB and exports 6.8 GB (in the temporary directory,
// or AC3_BENCH_KEEP).
func BenchmarkScale(b *testing.B) {
	sizes, err := scaleSizes()
	if err != nil {
		b.Fatal(err)
	}
	side, err := sideBySideFrom()
	if err != nil {
		b.Fatal(err)
	}
	files, err := generatedSizes(sizes)
	if err != nil {
		b.Fatal(err)
	}
	bin := ac3Binary(b)
	launcher := launcherBinary(b)
	figs := map[string]map[int]scaleFigure{}
	gov := map[string]map[int]governed{}
	ceilings := map[string]int{}
	var order []string
	for _, n := range sizes {
		b.Run(fmt.Sprintf("conversations=%d", n), func(b *testing.B) {
			f := files[n]
			id, err := firstID(f.Path)
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			if k := os.Getenv(keepEnv); k != "" {
				dir = filepath.Join(k, fmt.Sprintf("conversations-%d", n))
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			measure, steps, err := scaleMeasure(launcher, bin, dir, f.Path, n, id, side > 0 && n >= side)
			if err != nil {
				b.Fatal(err)
			}
			var peak int64
			for i, st := range steps {
				g, err := measure(i)
				if err != nil {
					b.Fatalf("%s: %v", st.name, err)
				}
				f := g.gov
				if figs[st.name] == nil {
					figs[st.name] = map[int]scaleFigure{}
					gov[st.name] = map[int]governed{}
					order = append(order, st.name)
				}
				figs[st.name][n], gov[st.name][n] = f, g
				ceilings[st.name] = stepCeiling(st.args)
				peak = max(peak, f.rss)
				// Printed as it goes: the largest size runs for hours.
				fmt.Fprintf(os.Stderr, "bench scale: %d conversations: %s: %.0f MB peak RSS, %.1f s, %.1f CPU-s, GC %.2f s, sys %.2f s; --memory-limit off: %.0f MB, %.1f s, %.1f CPU-s, GC %.2f s, sys %.2f s; own cost %+.1f%% (%s)\n",
					n, st.name, float64(f.rss)/mb, f.wall.Seconds(), f.cpu.Seconds(), f.gc.Seconds(), f.sys.Seconds(),
					float64(g.off.rss)/mb, g.off.wall.Seconds(), g.off.cpu.Seconds(), g.off.gc.Seconds(), g.off.sys.Seconds(), 100*g.own, g.how())
				if f.rss > maxRSSBytes {
					b.Errorf("%s at %d conversations: peak RSS %.0f MB, over 1 GiB", st.name, n, float64(f.rss)/mb)
				}
			}
			b.ReportMetric(float64(peak)/mb, "max-peak-RSS-MB")
		})
	}
	printScale(os.Stdout, sizes, order, figs, maxRSSGrowth)
	printGoverned(os.Stdout, sizes, order, gov, ceilings)
	if len(order) > 0 {
		fmt.Println("export preferences and winners are not run: they read judge verdicts, which this model-free run has none of.")
	}
	for _, e := range rssGrowthErrors(sizes, order, figs, maxRSSGrowth, "target") {
		b.Error(e)
	}
	for _, e := range governErrors(sizes, order, gov) {
		b.Error(e)
	}
}

// scaleMeasure makes the run of one size in dir: its steps, and a function
// that measures step i governed and with --memory-limit off. Side by side,
// each side has a run of its own, in dir's governed and off
// subdirectories; otherwise there is one run, in dir.
func scaleMeasure(launcher, bin, dir, in string, n int, id string, sideBySide bool) (func(i int) (governed, error), []scaleStep, error) {
	if !sideBySide {
		steps, err := scaleSteps(dir, in, n, id)
		return func(i int) (governed, error) {
			return measureGoverned(launcher, bin, steps[i], filepath.Join(dir, "run.db"))
		}, steps, err
	}
	var sides [2][]scaleStep
	for k, name := range []string{"governed", "off"} {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
		steps, err := scaleSteps(d, in, n, id)
		if err != nil {
			return nil, nil, err
		}
		sides[k] = steps
	}
	return func(i int) (governed, error) {
		return measureSideBySide(launcher, bin, sides[0][i], sides[1][i])
	}, sides[0], nil
}

// measureStep runs one step in its own process, started by the launcher
// (see peakRSS), and returns its wall time and peak RSS. With pick, a quick
// step (see quickPeaks) is run quickRuns times and pick chooses among the
// sorted peaks (median, highest).
func measureStep(launcher, bin string, st scaleStep, pick func(sorted []int64) int64) (scaleFigure, error) {
	rss, wall, out, err := peakRSS(launcher, st.command(bin, st.args))
	if err != nil {
		return scaleFigure{}, err
	}
	if st.want != "" && !bytes.Contains(out, []byte(st.want)) {
		return scaleFigure{}, fmt.Errorf("said %q, want %q", out, st.want)
	}
	if pick != nil {
		peaks, err := quickPeaks(launcher, bin, st, rss, wall)
		if err != nil {
			return scaleFigure{}, err
		}
		rss = pick(peaks)
	}
	return scaleFigure{rss: rss, wall: wall}, nil
}

func median(sorted []int64) int64  { return sorted[len(sorted)/2] }
func highest(sorted []int64) int64 { return sorted[len(sorted)-1] }

// rssGrowthErrors says which commands peaked at the largest size above
// limit times their peak at the smallest; what names the limit in the
// message ("target", "limit").
func rssGrowthErrors(sizes []int, order []string, figs map[string]map[int]scaleFigure, limit float64, what string) []string {
	if len(sizes) < 2 {
		return nil
	}
	var errs []string
	small, large := sizes[0], sizes[len(sizes)-1]
	for _, name := range order {
		s, okS := figs[name][small]
		l, okL := figs[name][large]
		if okS && okL && float64(l.rss) > limit*float64(s.rss) {
			errs = append(errs, fmt.Sprintf("%s: peak RSS %.0f MB at %d conversations, %.2f× its %.0f MB at %d (%s ≤ %.1f×)",
				name, float64(l.rss)/mb, large, float64(l.rss)/float64(s.rss), float64(s.rss)/mb, small, what, limit))
		}
	}
	return errs
}

// quickPeaks returns, sorted, the peak RSS of quickRuns runs of a step
// whose first run (rss, wall) ended within quickStep and that can run again
// without changing the run; otherwise rss alone.
func quickPeaks(launcher, bin string, st scaleStep, rss int64, wall time.Duration) ([]int64, error) {
	peaks := []int64{rss}
	again := st.rerun()
	if again == nil || wall >= quickStep {
		return peaks, nil
	}
	for range quickRuns - 1 {
		p, _, _, err := peakRSS(launcher, st.command(bin, again))
		if st.scratch != "" {
			for _, f := range []string{st.scratch, st.scratch + "-wal", st.scratch + "-shm", st.scratch + ".lock"} {
				os.Remove(f)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("running it again: %w", err)
		}
		peaks = append(peaks, p)
	}
	slices.Sort(peaks)
	return peaks, nil
}

// printScale writes the table of figs to out, growth being the limit its
// heading names.
func printScale(out io.Writer, sizes []int, order []string, figs map[string]map[int]scaleFigure, growth float64) {
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(out, "\nevery command of a heuristic run, own process each: wall time and peak RSS (targets: largest ≤ %.1f× smallest, none above 1 GiB)\n", growth)
	w := tabwriter.NewWriter(out, 2, 0, 2, ' ', tabwriter.AlignRight)
	head := "command\t"
	for _, n := range sizes {
		head += fmt.Sprintf("%s wall\t%s RSS\t", count(n), count(n))
	}
	if len(sizes) > 1 {
		head += "RSS growth\t"
	}
	fmt.Fprintln(w, head)
	for _, name := range order {
		row := name + "\t"
		for _, n := range sizes {
			f, ok := figs[name][n]
			if !ok {
				row += "-\t-\t"
				continue
			}
			row += fmt.Sprintf("%.1f s\t%.0f MB\t", f.wall.Seconds(), float64(f.rss)/mb)
		}
		if len(sizes) > 1 {
			s, okS := figs[name][sizes[0]]
			l, okL := figs[name][sizes[len(sizes)-1]]
			if okS && okL {
				row += fmt.Sprintf("%.2f×\t", float64(l.rss)/float64(s.rss))
			} else {
				row += "-\t"
			}
		}
		fmt.Fprintln(w, row)
	}
	w.Flush()
}

func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}
