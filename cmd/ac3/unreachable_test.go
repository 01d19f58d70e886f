package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

// cliResult is what a real ac3 process did.
type cliResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runCLI runs ac3 as a real process (see ac3Process) to its end, so that
// the exit status and what main prints are what a user sees. A process
// still running after cliTimeout is killed and fails the test.
func runCLI(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	cmd := ac3Process(env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killer := time.AfterFunc(cliTimeout, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	killer.Stop()
	res := cliResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("ac3 %s: %v (after %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, res.took, res.stdout, res.stderr)
	}
	return res
}

// cliTimeout only turns a hang into a failure; it is not a bound any test
// checks.
const cliTimeout = 5 * time.Minute

// closedPort returns host:port where nothing listens: a port the kernel
// gave out, closed again.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// endpointConfig writes a config with one endpoint at base, whose key is
// in AC3_TEST_KEY, serving the annotator and judge roles; unreachable, when
// set, is its limits.unreachable.
func endpointConfig(t *testing.T, db, base, unreachable string) string {
	t.Helper()
	limits := ""
	if unreachable != "" {
		limits = ", limits: {unreachable: " + unreachable + "}"
	}
	body := fmt.Sprintf(`run: {db: %s}
endpoints:
  e: {base_url: %q, api_key_env: AC3_TEST_KEY%s}
models:
  m: {endpoint: e}
roles:
  annotator: {model: m}
  judge: {model: m}
batch: {poll: 10ms}
`, db, base, limits)
	p := filepath.Join(t.TempDir(), "endpoint.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// stopLine checks that res stopped with status 3 and one closing line
// ("ac3: …", the last line of stderr) holding every one of wants, and
// returns that line.
func stopLine(t *testing.T, res cliResult, wants ...string) string {
	t.Helper()
	var closing []string
	for _, l := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
		if strings.HasPrefix(l, "ac3:") {
			closing = append(closing, l)
		}
	}
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	last := lines[len(lines)-1]
	if res.code != run.ExitStopped || len(closing) != 1 || closing[0] != last {
		t.Fatalf("exit status %d, closing lines %q; want status 3 and one closing line, the last\nstdout:\n%s\nstderr:\n%s", res.code, closing, res.stdout, res.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(last, w) {
			t.Errorf("the closing line lacks %q:\n%s", w, last)
		}
	}
	return last
}

// TestUnreachableEndpointStopsTheCommand: with nothing listening at the
// base URL, or a host that does not resolve, a model stage (online and in
// batch mode) and `llm ping` end after the endpoint's unreachable time
// (limits.unreachable, or --unreachable) with status 3 and one line naming
// the base URL, the error and what to check; nothing is recorded, and the
// same command against a working endpoint then does all the work.
func TestUnreachableEndpointStopsTheCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	for _, tc := range []struct {
		name, base string
		wants      []string
	}{
		{name: "nothing listens", base: "http://" + closedPort(t) + "/v1",
			wants: []string{"connection refused", "check that the server is up and listening at that address and port"}},
		{name: "host does not resolve", base: "http://nothing.invalid/v1",
			wants: []string{"nothing.invalid", "check the host name in the base URL and DNS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"AC3_TEST_KEY=k"}
			wants := append([]string{"endpoint m at " + tc.base + " unreachable for "}, tc.wants...)
			for _, mode := range []string{"online", "batch"} {
				db := ingestedRun(t)
				args := func(base, unreachable string) []string {
					a := []string{"annotate", "--db", db, "--stages", "classify", "--annotator", "llm", "--config", endpointConfig(t, db, base, unreachable)}
					if mode == "batch" {
						a = append(a, "--batch")
					}
					return a
				}
				res := runCLI(t, env, args(tc.base, "2s")...)
				line := stopLine(t, res, wants...)
				t.Logf("%s: stopped after %v: %s", mode, res.took.Round(time.Millisecond), line)
				// Not before the endpoint's time, and long before the
				// default minute: the config's 2s applied.
				if res.took < 2*time.Second || res.took > 40*time.Second {
					t.Errorf("%s: stopped after %v; want about the configured 2s", mode, res.took)
				}

				srv := llmtest.New(t, llmtest.Options{})
				srv.Add(llmtest.Rule{Func: fakeAnnotator})
				res = runCLI(t, env, args(srv.URL, "")...)
				if res.code != 0 || !strings.Contains(res.stdout, "classify (llm): 10 conversations done, 0 with failed units") ||
					!strings.Contains(res.stdout, "(0 conversations recorded before)") {
					t.Fatalf("%s: resumed run: status %d\n%s\n%s", mode, res.code, res.stdout, res.stderr)
				}
			}

			// llm ping: the config's time, and --unreachable for an
			// endpoint from the environment.
			db := filepath.Join(t.TempDir(), "x.db")
			stopLine(t, runCLI(t, env, "llm", "ping", "--role", "judge", "--config", endpointConfig(t, db, tc.base, "2s")), wants...)
			res := runCLI(t, []string{"OPENAI_BASE_URL=" + tc.base, "OPENAI_API_KEY=k", "OPENAI_MODEL=m"}, "llm", "ping", "--unreachable", "1s")
			stopLine(t, res, append([]string{"endpoint default at " + tc.base}, tc.wants...)...)
			if res.took > 40*time.Second {
				t.Errorf("ping with --unreachable 1s took %v", res.took)
			}
		})
	}
}

// TestBatchFaultsStopLikeOnline: a rejected key and an unknown model stop
// a stage in batch mode with the status (3) and the line an online run
// gives, the key named by its variable, never shown; the requests stay
// pending, and the run completes once the fault is fixed.
func TestBatchFaultsStopLikeOnline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	args := func(db string, batch bool) []string {
		a := []string{"annotate", "--db", db, "--stages", "classify", "--annotator", "llm"}
		if batch {
			a = append(a, "--batch")
		}
		return a
	}
	envFor := func(srv *llmtest.Server, key string) []string {
		return []string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=" + key, "OPENAI_MODEL=m"}
	}
	done := func(t *testing.T, res cliResult) {
		t.Helper()
		if res.code != 0 || !strings.Contains(res.stdout, "classify (llm): 10 conversations done, 0 with failed units") {
			t.Fatalf("run after the fix: status %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
	}

	t.Run("bad key", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Options{Key: "sk-right"})
		srv.Add(llmtest.Rule{Func: fakeAnnotator})
		want := "endpoint default: 401 unauthorized: check OPENAI_API_KEY (server said: Incorrect API key provided.)"
		online := stopLine(t, runCLI(t, envFor(srv, "sk-wrong-key"), args(ingestedRun(t), false)...), want)
		db := ingestedRun(t)
		batch := stopLine(t, runCLI(t, envFor(srv, "sk-wrong-key"), args(db, true)...), want)
		if strings.Contains(online+batch, "sk-wrong-key") {
			t.Errorf("a line shows the key:\n%s\n%s", online, batch)
		}
		done(t, runCLI(t, envFor(srv, "sk-right"), args(db, true)...))
	})

	t.Run("unknown model", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Options{})
		srv.Fail(llmtest.Always(), llmtest.Fault{Kind: llmtest.Status, Status: 404, Message: "The model `m` does not exist", Code: "model_not_found"})
		want := "endpoint default: 404 not found: check the model name m and the endpoint's base URL (server said: The model `m` does not exist)"
		stopLine(t, runCLI(t, envFor(srv, "k"), args(ingestedRun(t), false)...), want)
		db := ingestedRun(t)
		stopLine(t, runCLI(t, envFor(srv, "k"), args(db, true)...), want)
		if n := len(srv.Batches()); n != 1 {
			t.Fatalf("%d batches; want the one whose lines said 404", n)
		}

		fixed := llmtest.New(t, llmtest.Options{})
		fixed.Add(llmtest.Rule{Func: fakeAnnotator})
		done(t, runCLI(t, envFor(fixed, "k"), args(db, true)...))
	})
}
