package curate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
	"github.com/ac3/ac3/stages/curate"
)

// pluginEnv switches the test binary into a plug-in compactor (see
// TestMain): its value is the plug-in's behaviour.
const (
	pluginEnv    = "AC3_TEST_COMPACT_PLUGIN"
	pluginLogEnv = "AC3_TEST_COMPACT_PLUGIN_LOG"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(pluginEnv); mode != "" {
		os.Exit(fakePlugin(mode, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// fakeCompact is the test plug-in's compaction: one assistant message
// naming how many messages it got, the last one, and its budget setting.
func fakeCompact(req curate.PluginRequest) string {
	last := ""
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1].Role + ":" + req.Messages[n-1].Content
	}
	return fmt.Sprintf("%d messages, last %s, budget %v", len(req.Messages), last, req.Settings["budget"])
}

// fakePlugin is a plug-in compactor: it reads a request on stdin and
// answers on stdout as mode says.
func fakePlugin(mode string, in io.Reader, out, errw io.Writer) int {
	if p := os.Getenv(pluginLogEnv); p != "" {
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(f, mode)
			f.Close()
		}
	}
	var req curate.PluginRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil || req.Schema != curate.PluginSchema {
		fmt.Fprintf(errw, "bad request: %v\n", err)
		return 2
	}
	switch mode {
	case "ok":
		b, _ := json.Marshal(map[string]string{"text": fakeCompact(req)})
		out.Write(b)
	case "messages":
		fmt.Fprint(out, `{"messages": [{"role": "user", "content": "earlier asks"}, {"role": "assistant", "content": "earlier answers"}], "notes": {"ratio": 0.5}}`)
	case "sleep":
		time.Sleep(30 * time.Second)
	case "exit":
		fmt.Fprintln(errw, "loading model: no such file /models/lingua")
		return 3
	case "badjson":
		fmt.Fprint(out, "Compressed: u1 a1 {")
	case "error":
		fmt.Fprint(out, `{"error": "input too long for the compressor"}`)
	}
	return 0
}

func pluginLog(t *testing.T) (path string, count func() int) {
	path = t.TempDir() + "/calls"
	t.Setenv(pluginLogEnv, path)
	return path, func() int {
		b, _ := os.ReadFile(path)
		return strings.Count(string(b), "\n")
	}
}

func pluginStrategy(t *testing.T, p curate.Plugin, cache llm.Cache) curate.Strategy {
	t.Helper()
	return strategy(t, "plugin=fake", curate.Options{Compact: curate.CompactOptions{Plugins: map[string]curate.Plugin{"fake": p}, Cache: cache}})
}

func command(mode string) curate.Plugin {
	return curate.Plugin{Command: []string{os.Args[0], "-test.run=^$"}, Settings: map[string]any{"budget": 500}, Version: mode}
}

func TestPluginCommandCompacts(t *testing.T) {
	_, calls := pluginLog(t)
	t.Setenv(pluginEnv, "ok")
	c := fourTurns()
	cache := llm.NewMemCache()
	s := pluginStrategy(t, command("ok"), cache)
	want := map[int]string{
		1: "system:Be brief.|assistant:0 messages, last , budget 500|user:u1|",
		2: "system:Be brief.|assistant:2 messages, last assistant:a1, budget 500|user:u2|",
		3: "system:Be brief.|assistant:4 messages, last assistant:a2, budget 500|user:u3|",
		4: "system:Be brief.|assistant:6 messages, last assistant:a3, budget 500|user:u4|",
	}
	for run := 1; run <= 2; run++ {
		for _, x := range curateAll(t, s, c, 1) {
			if got := rendered(c, x); got != want[x.Turn] {
				t.Errorf("run %d turn %d:\n got %q\nwant %q", run, x.Turn, got, want[x.Turn])
			}
			if x.Info.Operator != "plugin=fake" || x.Info.Action != curate.ActionCompact {
				t.Errorf("info %+v", x.Info)
			}
			checkContext(t, c, x)
		}
	}
	// Four histories, each compacted once: the re-run reads the cache.
	if n := calls(); n != 4 || cache.Len() != 4 {
		t.Errorf("plug-in ran %d times, cache holds %d; want 4 and 4", n, cache.Len())
	}
	// Another plug-in identity (settings) is not answered from the cache.
	p := command("ok")
	p.Settings = map[string]any{"budget": 200}
	s2 := pluginStrategy(t, p, cache)
	if s2.Version() == s.Version() {
		t.Error("settings are not in the version")
	}
	x := curateAll(t, s2, c, 4)[0]
	if got := rendered(c, x); !strings.Contains(got, "budget 200") || calls() != 5 {
		t.Errorf("context %q after %d calls", got, calls())
	}
}

func TestPluginMessagesAnswer(t *testing.T) {
	t.Setenv(pluginEnv, "messages")
	c := fourTurns()
	x := curateAll(t, pluginStrategy(t, command("messages"), nil), c, 3)[0]
	want := "system:Be brief.|user:earlier asks|assistant:earlier answers|user:u3|"
	if got := rendered(c, x); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	checkContext(t, c, x)
}

func TestPluginCommandFailuresFailTheTurn(t *testing.T) {
	c := fourTurns()
	for _, tc := range []struct {
		mode    string
		timeout time.Duration
		want    []string
	}{
		{"exit", 0, []string{"exit status 3", `stderr (end): "loading model: no such file /models/lingua"`}},
		{"badjson", 0, []string{"not a ac3.compact.v1 JSON object", `"Compressed: u1 a1 {"`}},
		{"error", 0, []string{"the plug-in reported: input too long for the compressor"}},
		{"sleep", 300 * time.Millisecond, []string{"timed out after 300ms"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Setenv(pluginEnv, tc.mode)
			p := command(tc.mode)
			p.Timeout = tc.timeout
			cache := llm.NewMemCache()
			start := time.Now()
			xs, err := pluginStrategy(t, p, cache).Contexts(context.Background(), c, 2, curate.NewWorkspace(c, counter(t)))
			var te *curate.TurnError
			if !errors.As(err, &te) || te.Turn != 2 || len(xs) != 0 {
				t.Fatalf("got %d contexts and %v; want a failed turn 2", len(xs), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if time.Since(start) > 20*time.Second || cache.Len() != 0 {
				t.Errorf("took %s; cached %d failed answers", time.Since(start), cache.Len())
			}
		})
	}
	// A program that cannot be started stops the run: every unit would fail
	// the same way.
	p := curate.Plugin{Command: []string{t.TempDir() + "/no-such-program"}}
	_, err := pluginStrategy(t, p, nil).Contexts(context.Background(), c, 2, curate.NewWorkspace(c, counter(t)))
	var te *curate.TurnError
	if err == nil || errors.As(err, &te) || !strings.Contains(err.Error(), "running plug-in fake") {
		t.Errorf("missing program: %v", err)
	}
}

func TestPluginHTTP(t *testing.T) {
	var hits atomic.Int32
	fail := atomic.Int32{} // answers to fail with 503 before succeeding
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		var req curate.PluginRequest
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		switch req.Settings["mode"] {
		case "flaky":
			if fail.Add(-1) >= 0 {
				http.Error(w, "warming up", http.StatusServiceUnavailable)
				return
			}
		case "reject":
			http.Error(w, `{"detail": "budget must be positive"}`, http.StatusUnprocessableEntity)
			return
		case "slow":
			time.Sleep(2 * time.Second)
		}
		json.NewEncoder(w).Encode(map[string]string{"text": fakeCompact(req)})
	}))
	defer srv.Close()
	c := fourTurns()
	plug := func(mode string) curate.Plugin {
		return curate.Plugin{URL: srv.URL, Settings: map[string]any{"mode": mode, "budget": 500}, Timeout: time.Second}
	}

	// Two 503s, then an answer: within the default two retries.
	fail.Store(2)
	cache := llm.NewMemCache()
	s := pluginStrategy(t, plug("flaky"), cache)
	x := curateAll(t, s, c, 3)[0]
	if got := rendered(c, x); got != "system:Be brief.|assistant:4 messages, last assistant:a2, budget 500|user:u3|" {
		t.Errorf("context %q", got)
	}
	// Turn 3: two 503s and an answer; turn 4: an answer.
	if hits.Load() != 4 {
		t.Errorf("%d requests, want 4", hits.Load())
	}
	curateAll(t, s, c, 3) // the cache answers
	if hits.Load() != 4 {
		t.Errorf("re-run sent %d requests", hits.Load()-4)
	}

	for _, tc := range []struct {
		mode  string
		fails int32
		hits  int32
		want  string
	}{
		{"flaky", 5, 3, "503 Service Unavailable: \"warming up\\n\" (after 3 tries)"},
		{"reject", 0, 1, `422 Unprocessable Entity`},
		{"slow", 0, 3, "timed out after 1s (after 3 tries)"},
	} {
		hits.Store(0)
		fail.Store(tc.fails)
		_, err := pluginStrategy(t, plug(tc.mode), nil).Contexts(context.Background(), c, 2, curate.NewWorkspace(c, counter(t)))
		var te *curate.TurnError
		if !errors.As(err, &te) || te.Turn != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a failed turn 2 saying %q", tc.mode, err, tc.want)
		}
		if hits.Load() != tc.hits {
			t.Errorf("%s: %d requests, want %d", tc.mode, hits.Load(), tc.hits)
		}
	}
}

func TestPluginConfigErrors(t *testing.T) {
	for _, p := range []curate.Plugin{{}, {Command: []string{"x"}, URL: "http://h"}, {Command: []string{""}}, {URL: "http://h", Timeout: -time.Second}} {
		_, err := curate.ByName("plugin=p", curate.Options{Compact: curate.CompactOptions{Plugins: map[string]curate.Plugin{"p": p}}})
		if err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

func TestParsePluginResponse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // role:content| or an error substring after "error: "
	}{
		{`{"text": "short"}`, "assistant:short|"},
		{`{"text": "  "}`, ""},
		{`{"messages": []}`, ""},
		{`{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], "notes": [1]}`, "user:a|assistant:b|"},
		{`{"messages": [{"role": "system", "content": "a"}]}`, `error: role "system"`},
		{`{"text": "a", "messages": []}`, "error: exactly one"},
		{`{}`, "error: exactly one"},
		{`{"txt": "a"}`, `error: unknown field "txt"`},
		{`{"text": "a"} {"text": "b"}`, "error: more after"},
		{`not json`, `error: "not json"`},
		{`{"error": "too long"}`, "error: reported: too long"},
	} {
		msgs, err := curate.ParsePluginResponse([]byte(tc.in))
		got := ""
		for _, m := range msgs {
			got += string(m.Role) + ":" + m.Content + "|"
		}
		if err != nil {
			got = "error: " + err.Error()
		}
		if w, isErr := strings.CutPrefix(tc.want, "error: "); isErr && !strings.Contains(got, w) || !isErr && got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzParsePluginResponse(f *testing.F) {
	for _, s := range []string{`{"text": "x"}`, `{"messages": [{"role": "user", "content": "a"}]}`, `{"error": "e"}`, `{"notes": {}}`, `[1]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := curate.ParsePluginResponse(b)
		if err != nil {
			if msgs != nil {
				t.Errorf("messages with an error")
			}
			return
		}
		for _, m := range msgs {
			if m.Role != conv.User && m.Role != conv.Assistant {
				t.Errorf("role %q accepted", m.Role)
			}
		}
	})
}

// TestCompactorsDryRunCallsNothing: the dry run's estimate neither calls the
// compaction model nor runs a plug-in; it counts one compaction call per
// turn with a history (turns 2..4 here), shared by llm-compact and
// extract-sc, and predicts every context.
func TestCompactorsDryRunCallsNothing(t *testing.T) {
	_, plugged := pluginLog(t)
	t.Setenv(pluginEnv, "ok")
	srv := compactServer(t)
	an, err := analyze.New(analyzetest.Client(t, srv, nil), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := fourTurns()
	opts := curate.Options{Analyzer: an, Units: constraintUnits(c), Constraints: curate.Upstream{Version: "1"},
		Compact: curate.CompactOptions{Plugins: map[string]curate.Plugin{"fake": command("ok")}}}
	var sts []curate.Strategy
	names := []string{"llm-compact", "extract-sc", "plugin=fake", "plugin=fake+constraints", "extract-sc=plugin=fake", "extract-sc=recent-n=1", "llm-compact+constraints"}
	for _, n := range names {
		sts = append(sts, strategy(t, n, opts))
	}
	st := curate.NewStage(sts, counter(t), 2)
	fc := pipeline.NewForecast(func(s string) int { return len(s) / 4 })
	calls, err := st.Estimate(context.Background(), pipeline.Task{Conv: c, Variants: st.Variants()}, fc)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, cl := range calls {
		keys[cl.Key] = true
	}
	if srv.Count() != 0 || plugged() != 0 || len(keys) != 3 {
		t.Errorf("%d model requests, %d plug-in runs, %d distinct calls estimated (want 0, 0, 3)", srv.Count(), plugged(), len(keys))
	}
	for _, n := range names {
		for turn := 2; turn <= 4; turn++ {
			if p, ok := fc.Get(curate.StageName, n, turn); !ok || p.Tokens == 0 {
				t.Errorf("%s turn %d: no prediction", n, turn)
			}
		}
	}
}
