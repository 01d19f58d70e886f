package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
)

// keyConfig is a run over db that labels turns with a model on one endpoint
// at url; keySetting is the endpoint's key setting (", api_key_env: X" or
// ""), annotator its classify annotator.
func keyConfig(t *testing.T, db, url, keySetting, annotator string) string {
	t.Helper()
	body := fmt.Sprintf(`run: {db: %q}
endpoints:
  local: {base_url: %q%s}
models:
  m: {endpoint: local, name: test-model}
roles:
  annotator: {model: m}
stages:
  classify: {annotator: %s}
`, db, url, keySetting, annotator)
	p := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// An endpoint whose api_key_env names an unset or empty variable stops a
// command that would call it before its first request — a run, a batch
// run, a ping — with one line naming the variable and the config line; the
// dry run prints the plan and ends with the same line. An endpoint without
// api_key_env, or the environment's with only OPENAI_BASE_URL, is sent no
// key; one whose variable is set is sent it.
func TestEndpointKeysInCommands(t *testing.T) {
	const unsetLine = "config %s: line 3: endpoints.local.api_key_env: AC3_TEST_KEY is not set or is empty, so nothing is sent; export it, or remove api_key_env if the server needs no key"
	tests := []struct {
		name       string
		serverKey  string // the only key the server takes; "" takes any request
		keySetting string // the endpoint's key setting in the config
		annotator  string // llm (calls the model) or heuristic
		env        map[string]string
		args       func(db, cfg string) []string
		wantErr    string   // the error (%s: the config file); "" for success
		wantOut    []string // in the output
		sent       bool     // requests reach the server
		auth       string   // the Authorization header they carry
	}{
		{name: "run, variable unset", keySetting: ", api_key_env: AC3_TEST_KEY", annotator: "llm",
			args: func(db, cfg string) []string { return []string{"run", "--config", cfg} }, wantErr: unsetLine},
		{name: "run, variable empty", keySetting: ", api_key_env: AC3_TEST_KEY", annotator: "llm", env: map[string]string{"AC3_TEST_KEY": ""},
			args: func(db, cfg string) []string { return []string{"run", "--config", cfg} }, wantErr: unsetLine},
		{name: "batch run, variable unset", keySetting: ", api_key_env: AC3_TEST_KEY", annotator: "llm",
			args: func(db, cfg string) []string { return []string{"run", "--config", cfg, "--batch"} }, wantErr: unsetLine},
		{name: "stage command, variable unset", keySetting: ", api_key_env: AC3_TEST_KEY", annotator: "llm",
			args: func(db, cfg string) []string {
				return []string{"annotate", "--db", db, "--config", cfg, "--stages", "classify", "--annotator", "llm"}
			}, wantErr: unsetLine},
		{name: "dry run, variable unset", keySetting: ", api_key_env: AC3_TEST_KEY", annotator: "llm",
			args:    func(db, cfg string) []string { return []string{"run", "--config", cfg, "--dry-run"} },
			wantErr: unsetLine + "; the run would refuse to start (the plan above is what it would do with the key set); nothing was changed",
			wantOut: []string{"over 10 conversations:", "total: "}},
		{name: "ping, variable unset", keySetting: ", api_key_env: AC3_TEST_KEY", annotator: "llm",
			args: func(db, cfg string) []string { return []string{"llm", "ping", "--config", cfg, "--role", "annotator"} }, wantErr: unsetLine},
		{name: "a run that calls no model needs no key", keySetting: ", api_key_env: AC3_TEST_KEY", annotator: "heuristic",
			args:    func(db, cfg string) []string { return []string{"run", "--config", cfg} },
			wantOut: []string{"classify (heuristic): 10 conversations done"}},
		{name: "run, variable set", serverKey: "sk-cmd-test", keySetting: ", api_key_env: AC3_TEST_KEY", annotator: "llm", env: map[string]string{"AC3_TEST_KEY": "sk-cmd-test"},
			args: func(db, cfg string) []string { return []string{"run", "--config", cfg} }, sent: true, auth: "Bearer sk-cmd-test",
			wantOut: []string{"classify (llm): 10 conversations done"}},
		{name: "run, no api_key_env", annotator: "llm",
			args: func(db, cfg string) []string { return []string{"run", "--config", cfg} }, sent: true,
			wantOut: []string{"classify (llm): 10 conversations done"}},
		{name: "dry run, no api_key_env", annotator: "llm",
			args:    func(db, cfg string) []string { return []string{"run", "--config", cfg, "--dry-run"} },
			wantOut: []string{"note: no API key is sent to endpoint m: none is configured"}},
		{name: "ping, no api_key_env", annotator: "llm",
			args: func(db, cfg string) []string { return []string{"llm", "ping", "--config", cfg, "--role", "annotator"} }, sent: true,
			wantOut: []string{"key:      none sent (the endpoint names no key variable)"}},
		{name: "environment, no OPENAI_API_KEY", env: map[string]string{"OPENAI_BASE_URL": "", "OPENAI_MODEL": "m"},
			args: func(db, cfg string) []string {
				return []string{"annotate", "--db", db, "--stages", "classify", "--annotator", "llm"}
			}, sent: true, wantOut: []string{"classify (llm): 10 conversations done"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Options{Key: tc.serverKey})
			srv.Add(llmtest.Rule{Func: fakeAnnotator})
			db := ingestedRun(t)
			cfg := keyConfig(t, db, srv.URL, tc.keySetting, tc.annotator)
			env := map[string]string{}
			for k, v := range tc.env {
				if k == "OPENAI_BASE_URL" {
					v = srv.URL
				}
				env[k] = v
			}
			out, err := runAppEnv(t, env, tc.args(db, cfg)...)
			if tc.wantErr != "" {
				want := strings.ReplaceAll(tc.wantErr, "%s", cfg)
				if err == nil || err.Error() != want || run.ExitCode(err) != run.ExitError {
					t.Errorf("err = %v (exit %d)\nwant %s (exit %d)", err, run.ExitCode(err), want, run.ExitError)
				}
			} else if err != nil {
				t.Errorf("err = %v\n%s", err, out)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q:\n%s", want, out)
				}
			}
			if n := srv.Requests(); tc.sent != (n > 0) {
				t.Errorf("%d requests reached the server", n)
			}
			for _, c := range srv.Calls() {
				if got := c.Header.Get("Authorization"); got != tc.auth {
					t.Errorf("a request carried Authorization %q, want %q", got, tc.auth)
				}
			}
			if strings.Contains(out, "sk-cmd-test") || err != nil && strings.Contains(err.Error(), "sk-cmd-test") {
				t.Error("the output shows the key")
			}
		})
	}
}
