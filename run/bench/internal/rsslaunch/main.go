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
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() { os.Exit(run()) }

func run() int {
	// The job, as the bench tests pass it: {Argv, Env} in AC3_BENCH_JOB.
	var job struct{ Argv, Env []string }
	if err := json.Unmarshal([]byte(os.Getenv("AC3_BENCH_JOB")), &job); err != nil || len(job.Argv) == 0 {
		fmt.Fprintf(os.Stderr, "reading AC3_BENCH_JOB: %v\n", err)
		return 2
	}
	cmd := exec.Command(job.Argv[0], job.Argv[1:]...)
	cmd.Env = job.Env
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "running %s: %v\n", job.Argv[0], err)
		return 1
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "no rusage on this platform")
		return 1
	}
	// Linux reports Maxrss in kilobytes.
	err := json.NewEncoder(os.Stdout).Encode(struct {
		MaxRSSKB int64  `json:"maxrss_kb"`
		CPUNanos int64  `json:"cpu_ns"` // user and system
		Stdout   []byte `json:"stdout"`
	}{ru.Maxrss, ru.Utime.Nano() + ru.Stime.Nano(), stdout.Bytes()})
	if err != nil {
		return 1
	}
	return 0
}
