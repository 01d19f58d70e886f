//go:build linux

package bench_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The two sizes of TestMemoryFlat. The small one must be past the warm-up
// of the exports, whose Parquet row groups (16 MiB or 4096 rows) fill only
// after a few thousand conversations, and whose steady state has one group
// being written while the next is built. The annotations export has about
// 2.2 rows a conversation: at 2,000 conversations it wrote its only full
// group at the end, with nothing built beside it and the zstd encoder's
// 16 MiB window (taken on the first page over 128 KiB) after the peak, so
// its peak there was below the steady state's (85 MB, then 102, 124 and
// 129 MB at 4k, 10k and 100k) and CI once failed on 71 against 106 MB. The
// large one is what CI can afford (annotate and curate dominate its cost).
// A 2.5× step is still enough for memory held per conversation to show: a
// conversation's text is about 27 KB.
const (
	memSmall = 4_000
	memLarge = 10_000
)

// memMaxGrowth bounds TestMemoryFlat's ratio of peak RSS, large size over
// small. Without a leak the commands stay within about 1.3× on a loaded
// machine, with a rare outlier near 1.5× (hence a step over the limit is
// measured again); an export made to hold every conversation it read grows
// past 1.8×.
const memMaxGrowth = 1.5

// memEnv is set in each command's environment, over this process's, so
// that its heap follows what is live. With the default governor a short
// command runs under its ceiling, with the collector's slack filling
// whatever is not live, which hides memory held per conversation; without
// any limit the heap grows to twice what is live, so memory held shows
// twice over. BenchmarkScale measures the defaults, over runs long enough
// for the governor to matter.
var memEnv = []string{"AC3_MEMORY_LIMIT=off"}

// memUnset is left out of each command's environment: each would change
// the figures.
var memUnset = []string{"GOGC", "GOMEMLIMIT", "GODEBUG", "MALLOC_ARENA_MAX"}

var builtRelease, builtLauncher struct {
	sync.Once
	path string
	err  error
}

// releaseBinary builds cmd/ac3 once per run as the README builds a release
// (see goBuild), or returns the binary AC3_BENCH_BIN names. Its peaks are a
// plain build's, and CI's build of the release after `go test` then finds
// every package compiled.
func releaseBinary(tb testing.TB) string {
	tb.Helper()
	builtRelease.Do(func() {
		if p := os.Getenv(binEnv); p != "" {
			builtRelease.path, builtRelease.err = filepath.Abs(p)
			return
		}
		builtRelease.path, builtRelease.err = goBuild("github.com/ac3/ac3/cmd/ac3", "ac3-release", "-trimpath", "-ldflags", "-s -w")
	})
	if builtRelease.err != nil {
		tb.Fatal(builtRelease.err)
	}
	return builtRelease.path
}

// launcherBinary builds rsslaunch once per run (see goBuild).
func launcherBinary(tb testing.TB) string {
	tb.Helper()
	builtLauncher.Do(func() {
		builtLauncher.path, builtLauncher.err = goBuild("github.com/ac3/ac3/run/bench/internal/rsslaunch", "rsslaunch")
	})
	if builtLauncher.err != nil {
		tb.Fatal(builtLauncher.err)
	}
	return builtLauncher.path
}

// memCommandEnv is this process's environment without memUnset, with
// memEnv.
func memCommandEnv() []string {
	drop := slices.Clone(memUnset)
	for _, kv := range memEnv {
		k, _, _ := strings.Cut(kv, "=")
		drop = append(drop, k)
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(drop, k) {
			env = append(env, kv)
		}
	}
	return append(env, memEnv...)
}

// TestMemoryFlat is BenchmarkScale cut down to what CI can afford (on
// Linux, where Maxrss is in KiB and RSS is accounted as below): every
// command of a heuristic run, each in its own process, at memSmall and at
// memLarge conversations. It fails when a command's peak RSS at the larger
// size is above memMaxGrowth times its peak at the smaller, or above 1 GiB.
// It asserts no wall time: on a shared machine they say little, while a
// peak that grows with the input is what holding the run in memory looks
// like. The commands are started by rsslaunch, not by this test binary,
// whose own peak (about 42 MB, 72 MB under -race) would hide the smaller
// ones'.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ac3 and makes a heuristic run at two sizes")
	}
	sizes := []int{memSmall, memLarge}
	files, err := generatedSizes(sizes)
	if err != nil {
		t.Fatal(err)
	}
	bin, launcher := releaseBinary(t), launcherBinary(t)
	env := memCommandEnv()
	figs := map[string]map[int]scaleFigure{}
	var order []string
	for _, n := range sizes {
		f := files[n]
		id, err := firstID(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		steps, err := scaleSteps(t.TempDir(), f.Path, n, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range steps {
			st.env = env
			// The small size is the denominator, and a command that ends
			// within a second or two reaches its steady state in some runs
			// and not in others (export curated at 2k: 150 to 173 MB), so
			// there the steps that can run again keep the highest of
			// quickRuns peaks. At the large size that would cost more than
			// the rest of the test.
			var pick func([]int64) int64
			if n == memSmall {
				pick = highest
			}
			fig, err := measureStep(launcher, bin, st, pick)
			if err != nil {
				t.Fatalf("%d conversations: %s: %v", n, st.name, err)
			}
			if s, ok := figs[st.name][memSmall]; ok && n == memLarge && float64(fig.rss) > memMaxGrowth*float64(s.rss) {
				// Over the limit: where the step can run again, it does,
				// and the median counts. Memory held is there every time;
				// a collection at a bad moment is not (export curated at
				// 10k peaked between 192 and 213 MB, and once at 255).
				peaks, err := quickPeaks(launcher, bin, st, fig.rss, fig.wall)
				if err != nil {
					t.Fatalf("%d conversations: %s: %v", n, st.name, err)
				}
				if len(peaks) > 1 {
					t.Logf("%s at %d conversations peaked at %.0f MB, over %.1f× its %.0f MB at %d; in %d runs: %s MB, the median counts",
						st.name, n, float64(fig.rss)/mb, memMaxGrowth, float64(s.rss)/mb, memSmall, len(peaks), megabytes(peaks))
					fig.rss = median(peaks)
				}
			}
			if figs[st.name] == nil {
				figs[st.name] = map[int]scaleFigure{}
				order = append(order, st.name)
			}
			figs[st.name][n] = fig
			if fig.rss > maxRSSBytes {
				t.Errorf("%s at %d conversations: peak RSS %.0f MB, over 1 GiB", st.name, n, float64(fig.rss)/mb)
			}
		}
	}
	var table strings.Builder
	printScale(&table, sizes, order, figs, memMaxGrowth)
	fmt.Fprintf(&table, "each command ran with %s; at %s, the steps that can run again kept the highest peak of %d runs\n", strings.Join(memEnv, " "), count(memSmall), quickRuns)
	t.Log(table.String())
	for _, e := range rssGrowthErrors(sizes, order, figs, memMaxGrowth, "limit") {
		t.Error(e)
	}
}

// megabytes lists byte counts in MB.
func megabytes(b []int64) string {
	var out []string
	for _, v := range b {
		out = append(out, fmt.Sprintf("%.0f", float64(v)/mb))
	}
	return strings.Join(out, ", ")
}
