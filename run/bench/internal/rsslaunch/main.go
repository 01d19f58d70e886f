//go:build unix

// Command rsslaunch runs one command and prints its peak RSS, CPU time and
// standard output as JSON: every benchmark and TestMemoryFlat start the
// commands they measure through it.
//
// Linux carries a process's RSS high-water mark across exec, and os/exec
// starts a child sharing its parent's memory until the exec, so a command
// reports its launcher's peak whenever that is higher. A test binary as
// launcher would outweigh the smallest commands (status, inspect); this
// program imports little and peaks at a few MB.
//
// With GCTrace set in the job, the command runs with GODEBUG=gctrace=1 and
// the launcher adds up the collector's CPU time from the trace lines (which
// it keeps out of its own standard error). The memory governor's only ways
// to cost time are the collector and the kernel's work returning and
// faulting pages (system time, minor faults), so these figures show its
// cost apart from the machine's noise, which moves wall time by far more
// than the 5% being measured.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

func main() { os.Exit(run()) }

// report is what the launcher prints.
type report struct {
	MaxRSSKB int64  `json:"maxrss_kb"`
	CPUNanos int64  `json:"cpu_ns"` // user and system
	SysNanos int64  `json:"sys_ns"`
	MinFlt   int64  `json:"minflt"`
	GCNanos  int64  `json:"gc_cpu_ns,omitempty"`
	GCs      int    `json:"gcs,omitempty"`
	Stdout   []byte `json:"stdout"`
}

func run() int {
	// The job, as the bench tests pass it: {Argv, Env, GCTrace} in
	// AC3_BENCH_JOB.
	var job struct {
		Argv, Env []string
		GCTrace   bool
	}
	if err := json.Unmarshal([]byte(os.Getenv("AC3_BENCH_JOB")), &job); err != nil || len(job.Argv) == 0 {
		fmt.Fprintf(os.Stderr, "reading AC3_BENCH_JOB: %v\n", err)
		return 2
	}
	cmd := exec.Command(job.Argv[0], job.Argv[1:]...)
	cmd.Env = job.Env
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if job.GCTrace {
		cmd.Env = append(withoutGODEBUG(cmd.Env), "GODEBUG=gctrace=1")
	}
	// Standard error passes through gc.read, which counts trace lines (an
	// untraced command writes none) and forwards the rest.
	var gc gcTotal
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pipe: %v\n", err)
		return 1
	}
	defer pr.Close()
	cmd.Stderr = pw
	traced := make(chan error, 1)
	go func() { traced <- gc.read(pr, os.Stderr) }()
	err = cmd.Start()
	pw.Close()
	if err == nil {
		err = cmd.Wait()
	}
	if rerr := <-traced; err == nil && rerr != nil {
		err = fmt.Errorf("reading its standard error: %w", rerr)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "running %s: %v\n", job.Argv[0], err)
		return 1
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "no rusage on this platform")
		return 1
	}
	// Linux reports Maxrss in kilobytes.
	err = json.NewEncoder(os.Stdout).Encode(report{
		MaxRSSKB: ru.Maxrss,
		CPUNanos: ru.Utime.Nano() + ru.Stime.Nano(),
		SysNanos: ru.Stime.Nano(),
		MinFlt:   ru.Minflt,
		GCNanos:  gc.nanos,
		GCs:      gc.cycles,
		Stdout:   stdout.Bytes(),
	})
	if err != nil {
		return 1
	}
	return 0
}

func withoutGODEBUG(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			out = append(out, kv)
		}
	}
	return out
}

// gcTotal adds up the collector's CPU time over gctrace lines.
type gcTotal struct {
	nanos  int64
	cycles int
}

// read takes the command's standard error: trace lines are counted, the
// rest is passed to rest.
func (g *gcTotal) read(r io.Reader, rest io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if ms, ok := gcCPU(line); ok {
			g.nanos += int64(ms * 1e6)
			g.cycles++
			continue
		}
		fmt.Fprintln(rest, line)
	}
	return sc.Err()
}

// gcCPU reads one gctrace line, "gc 7 @1.2s 3%: …ms clock, a+b/c/d+e ms
// cpu, …", and returns the sum of its CPU phases in milliseconds: the two
// stop-the-world phases and the assist, background and idle marking (all
// are CPU the process is billed for).
func gcCPU(line string) (float64, bool) {
	if !strings.HasPrefix(line, "gc ") {
		return 0, false
	}
	_, after, ok := strings.Cut(line, " ms clock, ")
	if !ok {
		return 0, false
	}
	phases, _, ok := strings.Cut(after, " ms cpu")
	if !ok {
		return 0, false
	}
	var sum float64
	for _, f := range strings.FieldsFunc(phases, func(r rune) bool { return r == '+' || r == '/' }) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) { // NaN fails v >= 0
			return 0, false
		}
		sum += v
	}
	return sum, true
}
