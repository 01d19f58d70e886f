//go:build unix

package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/stages/filter"
)

// childEnv tells a re-executed test binary which job to do; childIn and
// childOut name its input and output.
const (
	childEnv = "AC3_BENCH_CHILD"
	childIn  = "AC3_BENCH_IN"
	childOut = "AC3_BENCH_OUT"
	// childRowGroupMB sets the Parquet row group cap of a convert child.
	childRowGroupMB = "AC3_BENCH_ROW_GROUP_MB"
	// childJob is the command a launcher runs, as JSON {Argv, Env}.
	childJob = "AC3_BENCH_JOB"
)

// child runs one job in a fresh process and prints its counts as JSON.
func child(mode string) int {
	ctx := context.Background()
	switch mode {
	case "convert":
		wo := parquetio.WriterOptions{}
		if n, err := strconv.Atoi(os.Getenv(childRowGroupMB)); err == nil {
			wo.RowGroupBytes = int64(n) << 20
		}
		st, err := convertFile(ctx, os.Getenv(childIn), os.Getenv(childOut), filter.Options{}, wo)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		json.NewEncoder(os.Stdout).Encode(st)
		return 0
	case "neardup":
		return nearChild(ctx)
	}
	fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, mode)
	return 2
}

// launched is what a launcher passes back: the job's peak RSS, CPU time
// (user and system; system alone), minor page faults, the collector's CPU
// time and cycles when traced, and output.
type launched struct {
	MaxRSSKB int64  `json:"maxrss_kb"`
	CPUNanos int64  `json:"cpu_ns"`
	SysNanos int64  `json:"sys_ns"`
	MinFlt   int64  `json:"minflt"`
	GCNanos  int64  `json:"gc_cpu_ns"`
	GCs      int    `json:"gcs"`
	Stdout   []byte `json:"stdout"`
}

// peakRSS runs cmd through launcher (rsslaunch, see launcherBinary) and returns its peak resident set size in bytes, from the
// kernel's accounting of the finished process, its wall time and its
// standard output.
func peakRSS(launcher string, cmd *exec.Cmd) (int64, time.Duration, []byte, error) {
	r, err := launchJob(launcher, cmd)
	return r.rss, r.wall, r.out, err
}

// jobRun is what launchJob measured of one process.
type jobRun struct {
	rss       int64
	wall, cpu time.Duration
	out       []byte
	// sys is the system part of cpu; gc the collector's CPU time over gcs
	// cycles (traced runs only); minflt the minor page faults.
	sys, gc time.Duration
	gcs     int
	minflt  int64
}

// launchJob is peakRSS with the process's CPU time (user and system, from
// the same accounting).
func launchJob(launcher string, cmd *exec.Cmd) (jobRun, error) {
	return launchTraced(launcher, cmd, false)
}

// launchTraced is launchJob that, with gcTrace, also measures the
// collector's CPU time (the command runs with GODEBUG=gctrace=1).
func launchTraced(launcher string, cmd *exec.Cmd, gcTrace bool) (jobRun, error) {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	job, err := json.Marshal(struct {
		Argv, Env []string
		GCTrace   bool
	}{cmd.Args, env, gcTrace})
	if err != nil {
		return jobRun{}, err
	}
	l := exec.Command(launcher)
	l.Env = append(os.Environ(), childJob+"="+string(job))
	var stdout, stderr bytes.Buffer
	l.Stdout, l.Stderr = &stdout, &stderr
	t0 := time.Now()
	if err := l.Run(); err != nil {
		return jobRun{}, fmt.Errorf("running %s: %w: %s", cmd.Path, err, bytes.TrimSpace(stderr.Bytes()))
	}
	wall := time.Since(t0)
	var res launched
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return jobRun{}, fmt.Errorf("reading the launcher's report %q: %w", stdout.Bytes(), err)
	}
	return jobRun{rss: res.MaxRSSKB << 10, wall: wall, cpu: time.Duration(res.CPUNanos), out: res.Stdout,
		sys: time.Duration(res.SysNanos), gc: time.Duration(res.GCNanos), gcs: res.GCs, minflt: res.MinFlt}, nil
}

// BenchmarkRSS is figure 3: the peak RSS of the first 10k and of all 200k
// conversations of the same stream, each in its own process, and the growth
// between them: for the convert path (this test binary re-executed, the
// parallel path with no filter, Parquet out) and for `ac3 ingest` into a
// fresh run file (the ac3 binary, built into a temporary directory).
func BenchmarkRSS(b *testing.B) {
	input(b)
	files, _ := generated()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	jobs := []struct {
		name, what string
		cmd        func(b *testing.B, f genFile) *exec.Cmd
		check      func(out []byte, f genFile) error
	}{
		{"convert", "convert to Parquet, parallel path (own process)", func(b *testing.B, f genFile) *exec.Cmd {
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), childEnv+"=convert", childIn+"="+f.Path, childOut+"="+filepath.Join(b.TempDir(), "out.parquet"))
			return cmd
		}, func(out []byte, f genFile) error {
			var st struct{ Records int64 }
			if err := json.Unmarshal(out, &st); err != nil || st.Records != int64(f.Conversations) {
				return fmt.Errorf("child said %q (%v), want %d records", out, err, f.Conversations)
			}
			return nil
		}},
		{"ingest", "ac3 ingest into a new run file", func(b *testing.B, f genFile) *exec.Cmd {
			bin := ac3Binary(b)
			return exec.Command(bin, "ingest", "--db", filepath.Join(b.TempDir(), "run.db"), f.Path)
		}, func(out []byte, f genFile) error {
			if want := fmt.Sprintf("kept %d conversations", f.Conversations); !bytes.Contains(out, []byte(want)) {
				return fmt.Errorf("ac3 ingest said %q, want %q", out, want)
			}
			return nil
		}},
	}
	for _, job := range jobs {
		var small float64
		for i, f := range files {
			b.Run(fmt.Sprintf("%s-%dk", job.name, f.Conversations/1000), func(b *testing.B) {
				// Peak RSS swings by ±10% from run to run with where the GC
				// lands in the Parquet writer's row-group cycle, and a long
				// run sees more cycles; so the short run is made three
				// times and its highest peak compared.
				var rss int64
				var wall time.Duration
				for range 1 + 2*(1-i) {
					r, w, out, err := peakRSS(launcherBinary(b), job.cmd(b, f))
					if err != nil {
						b.Fatal(err)
					}
					if err := job.check(out, f); err != nil {
						b.Fatal(err)
					}
					rss, wall = max(rss, r), w
				}
				mbRSS := float64(rss) / mb
				b.ReportMetric(mbRSS, "peak-RSS-MB")
				row := fmt.Sprintf("%5.0f MB peak RSS  (%5.1f s a run)", mbRSS, wall.Seconds())
				if i == 0 {
					small = mbRSS
				} else if small > 0 {
					growth := 100 * (mbRSS/small - 1)
					b.ReportMetric(growth, "growth-%")
					row += fmt.Sprintf("  growth %+.1f%% over 10k", growth)
				}
				runs := "1 run"
				if i == 0 {
					runs = "highest of 3 runs"
				}
				addRow("3. peak RSS (target: growth <= 10%)", fmt.Sprintf("%s: %dk conversations, %s", job.what, f.Conversations/1000, runs), "%s", row)
			})
		}
	}
}

// binDir is the temporary directory the binaries the tests build go in,
// made on first use; TestMain removes it.
var binDir struct {
	sync.Mutex
	path string
}

func makeBinDir() (string, error) {
	binDir.Lock()
	defer binDir.Unlock()
	if binDir.path == "" {
		dir, err := os.MkdirTemp("", "ac3-bench-")
		if err != nil {
			return "", err
		}
		binDir.path = dir
	}
	return binDir.path, nil
}

// goBuild builds the package pkg into binDir as name, with flags. It is a
// plain build even when the tests run with -race: the figures are the
// program's, not the race detector's.
func goBuild(pkg, name string, flags ...string) (string, error) {
	dir, err := makeBinDir()
	if err != nil {
		return "", err
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	linked := filepath.Join(dir, name+"-linked")
	cmd := exec.Command(goBin, append(append([]string{"build", "-o", linked}, flags...), pkg)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w: %s", name, err, out)
	}
	// Run a plain copy: the file the linker wrote sits in the page
	// cache in large folios, and a process mapping it counts ~20 MB
	// more of the binary in its RSS (status of a 10k run: 50 MB from
	// the linker's file, 27 MB from a copy), which is not the
	// program's memory and varies with how the file was written.
	path := filepath.Join(dir, name)
	if err := copyExecutable(linked, path); err != nil {
		return "", err
	}
	return path, os.Remove(linked)
}

var builtAC3 struct {
	sync.Once
	path string
	err  error
}

// binEnv names a prebuilt ac3 binary for the benchmarks to run instead of
// building one (e.g. to measure a release build, or to replace the binary
// between the steps of a run that lasts hours).
const binEnv = "AC3_BENCH_BIN"

// ac3Binary builds cmd/ac3 once per run (see goBuild), or returns the
// binary AC3_BENCH_BIN names.
func ac3Binary(tb testing.TB) string {
	tb.Helper()
	builtAC3.Do(func() {
		if p := os.Getenv(binEnv); p != "" {
			builtAC3.path, builtAC3.err = filepath.Abs(p)
			return
		}
		builtAC3.path, builtAC3.err = goBuild("github.com/ac3/ac3/cmd/ac3", "ac3")
	})
	if builtAC3.err != nil {
		tb.Fatal(builtAC3.err)
	}
	return builtAC3.path
}

// copyExecutable copies the file at from to a new executable at to.
func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", from, err)
	}
	return out.Close()
}
