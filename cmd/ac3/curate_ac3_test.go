package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

const ac3Marker = "ASSISTANT-ONLY-7c1e"

// runAC3Env runs ac3 in-process with an environment.
func runAC3Env(t *testing.T, vars map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	app := newApp(&env{stop: make(chan struct{}), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }})
	err := app.RunContext(ctx, append([]string{"ac3"}, args...))
	return out.String(), errb.String(), err
}

func mustRunAC3Env(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	out, errs, err := runAC3Env(t, vars, args...)
	if err != nil {
		t.Fatalf("ac3 %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errs)
	}
	return out
}

// ac3Run ingests two four-turn conversations whose assistant turns carry a
// marker, and returns the run file.
func ac3Run(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for _, id := range []string{"conv-a", "conv-b"} {
		var msgs []map[string]string
		for i := 1; i <= 4; i++ {
			msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("%s user turn %d", id, i)})
			msgs = append(msgs, map[string]string{"role": "assistant", "content": fmt.Sprintf("%s reply %d %s", id, i, ac3Marker)})
		}
		line, _ := json.Marshal(map[string]any{"id": id, "format": "canonical", "system": "Be exact.", "messages": msgs})
		b.Write(line)
		b.WriteByte('\n')
	}
	in := filepath.Join(dir, "convs.jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "run.db")
	mustRun(t, "ingest", "--db", db, in)
	return db
}

func ac3Server(t *testing.T, sc analyzetest.Script) (*llmtest.Server, map[string]string) {
	srv := llmtest.New(t, llmtest.Options{})
	analyzetest.Install(srv, sc)
	return srv, map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "test-key", "OPENAI_MODEL": "test-model"}
}

func issuesOn(turns ...int) func(int) string {
	return func(t int) string {
		for _, x := range turns {
			if x == t {
				return "drifted at turn " + fmt.Sprint(t)
			}
		}
		return "None"
	}
}

func TestCurateAC3ResumesWithoutRepeatCalls(t *testing.T) {
	db := ac3Run(t)
	srv, vars := ac3Server(t, analyzetest.Script{Issues: issuesOn(3)})
	out := mustRunAC3Env(t, vars, "curate", "--db", db, "--strategies", "fc,gated-reset,augment,rewrite,sum", "--warmup", "1")
	if !strings.Contains(out, "10 tasks done, 0 failed") {
		t.Fatalf("curate output:\n%s", out)
	}
	first := srv.Count()
	// Two conversations × turns 2..4 analyzed once (shared by three
	// operators): 12 analysis calls, plus 2 rewrites, plus 6 summaries.
	if first != 12+2+6 {
		t.Errorf("%d calls, want 20", first)
	}
	for _, c := range srv.Calls() {
		if analyzetest.Kind(c.Request) == analyzetest.KindSpec && strings.Contains(string(c.Body), ac3Marker) {
			t.Fatalf("step 1 saw assistant text:\n%s", c.Body)
		}
	}
	out = mustRunAC3Env(t, vars, "curate", "--db", db, "--strategies", "fc,gated-reset,augment,rewrite,sum", "--warmup", "1")
	if !strings.Contains(out, "nothing to do") || srv.Count() != first {
		t.Errorf("second run made %d new calls:\n%s", srv.Count()-first, out)
	}

	insp := mustRun(t, "inspect", "--db", db, "--conversation", "conv-a", "--turn", "3", "--strategies", "fc,gated-reset", "--width", "220")
	for _, want := range []string{"gated-reset", "action reset", "gate open", "[issues]", "drifted at turn 3", "[spec]", "[Context reset]"} {
		if !strings.Contains(insp, want) {
			t.Errorf("inspect lacks %q:\n%s", want, insp)
		}
	}
}

func TestCurateWithoutEndpointSkipsModelStrategiesInOneLine(t *testing.T) {
	db := ac3Run(t)
	out := mustRun(t, "curate", "--db", db, "--strategies", "fc,gated-reset")
	lines := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "skipping gated-reset") {
			lines++
		}
	}
	if lines != 1 || !strings.Contains(out, "OPENAI_BASE_URL") || !strings.Contains(out, "2 tasks done") {
		t.Errorf("curate without an endpoint:\n%s", out)
	}
}

func TestAblationIsLabelledEverywhere(t *testing.T) {
	db := ac3Run(t)
	srv, vars := ac3Server(t, analyzetest.Script{})
	out := mustRunAC3Env(t, vars, "curate", "--db", db, "--strategies", "augment", "--warmup", "1", "--ablation-contagious-extractor")
	if !strings.Contains(out, "ABLATION:contagious-extractor") {
		t.Errorf("curate does not announce the ablation:\n%s", out)
	}
	seen := false
	for _, c := range srv.Calls() {
		if analyzetest.Kind(c.Request) == analyzetest.KindContagious && strings.Contains(string(c.Body), ac3Marker) {
			seen = true
		}
	}
	if !seen {
		t.Error("the ablated extractor never saw the assistant's turns")
	}
	st := mustRun(t, "status", "--db", db, "--json")
	insp := mustRun(t, "inspect", "--db", db, "--conversation", "conv-b", "--turn", "2")
	if !strings.Contains(insp, "ABLATION:contagious-extractor") {
		t.Errorf("inspect does not label the ablation:\n%s", insp)
	}
	_ = st
	if _, _, err := runApp(t, "curate", "--db", db, "--strategies", "augment", "--ablation-contagious-extractor", "--ablation-single-pass"); err == nil {
		t.Error("both ablations at once were accepted")
	}
}

func TestPolicyFitExplainsWhatItNeeds(t *testing.T) {
	db := ac3Run(t)
	_, _, err := runApp(t, "policy", "fit", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "fc:ao") || !strings.Contains(err.Error(), "judge") {
		t.Errorf("policy fit without judgments: %v", err)
	}
}

func TestMemoryLearnThenCurateWithIt(t *testing.T) {
	db := ac3Run(t)
	srv, vars := ac3Server(t, analyzetest.Script{})
	out := mustRunAC3Env(t, vars, "memory", "learn", "--db", db, "--conversations", "1")
	if !strings.Contains(out, "learned on 1 conversations") {
		t.Fatalf("memory learn:\n%s", out)
	}
	again := mustRunAC3Env(t, vars, "memory", "learn", "--db", db, "--conversations", "1")
	if !strings.Contains(again, "already has cheatsheet") {
		t.Errorf("second learn:\n%s", again)
	}
	srv.Reset()
	mustRunAC3Env(t, vars, "curate", "--db", db, "--strategies", "reset", "--memory", "offline")
	got := false
	for _, c := range srv.Calls() {
		if analyzetest.Kind(c.Request) == analyzetest.KindEvaluate && strings.Contains(c.Request.Last(), "cheatsheet version 1") {
			got = true
		}
	}
	if !got {
		t.Error("step 2 did not receive the learned cheatsheet")
	}
	insp := mustRun(t, "inspect", "--db", db, "--conversation", "conv-b", "--turn", "3")
	if !strings.Contains(insp, "memory ") {
		t.Errorf("inspect does not show the memory hash:\n%s", insp)
	}
}

func TestCurateOnlineMemory(t *testing.T) {
	db := ac3Run(t)
	srv, vars := ac3Server(t, analyzetest.Script{Issues: issuesOn(3)})
	args := []string{"curate", "--db", db, "--strategies", "fc,gated-reset,augment", "--memory", "online", "--workers", "4"}
	out := mustRunAC3Env(t, vars, args...)
	if !strings.Contains(out, "one at a time, in ingest order") || !strings.Contains(out, "6 tasks done, 0 failed") {
		t.Fatalf("curate --memory online:\n%s", out)
	}
	// conv-a (ingested first) is analyzed with no cheatsheet; conv-b with
	// the one built from conv-a, and never with the one built from itself.
	var a, b int
	for _, c := range srv.Calls() {
		if analyzetest.Kind(c.Request) != analyzetest.KindEvaluate {
			continue
		}
		last := c.Request.Last()
		switch {
		case strings.Contains(last, "conv-a user turn"):
			a++
			if strings.Contains(last, "<cheatsheet>") {
				t.Errorf("conv-a's step 2 was given a cheatsheet:\n%s", last)
			}
		case strings.Contains(last, "conv-b user turn"):
			b++
			if !strings.Contains(last, "cheatsheet version 1") || strings.Contains(last, "cheatsheet version 2") {
				t.Errorf("conv-b's step 2 was not given exactly conv-a's cheatsheet:\n%s", last)
			}
		}
	}
	// Turns 2..4 of each conversation, analyzed once and shared by the
	// memory's trajectory and both operators.
	if a != 3 || b != 3 {
		t.Errorf("%d and %d evaluate calls, want 3 and 3", a, b)
	}
	first := srv.Count()
	if again := mustRunAC3Env(t, vars, args...); !strings.Contains(again, "nothing to do") || srv.Count() != first {
		t.Errorf("second run made %d calls:\n%s", srv.Count()-first, again)
	}

	show := mustRun(t, "memory", "show", "--db", db, "--conversation", "conv-b", "--text")
	for _, want := range []string{"last learned from conv-b", "step 2 was given cheatsheet", "| cheatsheet version 1", "| cheatsheet version 2", "takeaways:"} {
		if !strings.Contains(show, want) {
			t.Errorf("memory show lacks %q:\n%s", want, show)
		}
	}
	insp := mustRun(t, "inspect", "--db", db, "--conversation", "conv-b", "--turn", "3", "--strategies", "gated-reset")
	if !strings.Contains(insp, "memory online:") {
		t.Errorf("inspect does not label the online memory:\n%s", insp)
	}

	if _, _, err := runApp(t, "curate", "--db", db, "--strategies", "reset", "--memory", "bogus"); err == nil || !strings.Contains(err.Error(), "online") {
		t.Errorf("bad regime: %v", err)
	}
	dry := mustRunAC3Env(t, vars, "curate", "--db", db, "--strategies", "reset", "--memory", "online", "--dry-run")
	if !strings.Contains(dry, "online memory") {
		t.Errorf("dry run does not mention the online memory:\n%s", dry)
	}
}
