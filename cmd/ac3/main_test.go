package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary act as the ac3 command, so tests that need a
// real process (to kill it) run the code under test without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("AC3_TEST_AS_CLI") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// ac3Binary is the program the tests that need a real process (kills,
// signals, two writers) start: this test binary, which runs main when
// AC3_TEST_AS_CLI=1, or AC3_TEST_BIN when set. CI sets AC3_TEST_BIN to the
// ac3 it builds from the same checkout, so those processes run without the
// race detector's five- to tenfold slowdown (it still covers the same code
// run in-process); a binary from other sources would test the wrong code.
func ac3Binary() string {
	if bin := os.Getenv("AC3_TEST_BIN"); bin != "" {
		return bin
	}
	return os.Args[0]
}

// commandTimeout bounds one in-process command of a test. It only turns a
// real hang into a failure: under -race on a loaded machine an end-to-end
// command has taken over a minute, so it is generous rather than tight.
const commandTimeout = 10 * time.Minute

// runApp runs ac3 in-process with args and returns stdout and stderr.
func runApp(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	app := newApp(&env{stop: make(chan struct{}), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }})
	err := app.RunContext(ctx, append([]string{"ac3"}, args...))
	return out.String(), errb.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, err := runApp(t, args...)
	if err != nil {
		t.Fatalf("ac3 %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errs)
	}
	return out
}
