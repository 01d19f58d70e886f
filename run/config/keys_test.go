package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
)

// An endpoint's api_key_env is read into its key, with the config line it
// sits on for the error a command gives while the variable is unset; a
// value that cannot be a variable's name (usually the key itself) is
// refused at load without being repeated; an endpoint without one needs no
// key.
func TestAPIKeyEnv(t *testing.T) {
	const body = `run: {db: x.db}
endpoints:
  openai:
    base_url: "https://api.example.com/v1"
%s
models:
  big: {endpoint: openai}
  small: {endpoint: openai}
roles:
  judge: {model: big}
  respondent: {model: small}
`
	tests := []struct {
		name    string
		line    string            // the endpoint's key setting, "" for none
		env     map[string]string // the environment
		loadErr string            // in the load error; "" when it loads
		secret  string            // never in any error
		keyErr  string            // in Options.CheckKeys' error; "" for none
		keyless bool              // no key is sent
	}{
		{name: "variable set", line: "    api_key_env: OPENAI_API_KEY", env: map[string]string{"OPENAI_API_KEY": "sk-live-1"}, secret: "sk-live-1"},
		{name: "variable unset", line: "    api_key_env: OPENAI_API_KEY",
			keyErr: "config run.yaml: line 5: endpoints.openai.api_key_env: OPENAI_API_KEY is not set or is empty"},
		{name: "no api_key_env", keyless: true},
		{name: "the key pasted in", line: "    api_key_env: sk-proj-Abc123def456ghi789",
			loadErr: "line 5: endpoints.openai.api_key_env: the value (not shown here) is not the name of an environment variable", secret: "sk-proj-Abc123def456ghi789"},
		{name: "the key through ${VAR}", line: "    api_key_env: ${OPENAI_API_KEY}", env: map[string]string{"OPENAI_API_KEY": "sk-live-2"},
			loadErr: "is not the name of an environment variable", secret: "sk-live-2"},
		{name: "a key that reads as a name", line: "    api_key_env: a1b2c3d4e5f6a7b8c9d0e1f2a3b4",
			loadErr: "looks like a key, not the name of the variable that holds one", secret: "a1b2c3d4e5f6a7b8c9d0e1f2a3b4"},
		{name: "a lower-case name", line: "    api_key_env: my_key_2", env: map[string]string{"my_key_2": "k"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			cfg, err := load([]byte(strings.Replace(body, "%s", tc.line, 1)), "run.yaml", getenv)
			if tc.secret != "" && err != nil && strings.Contains(err.Error(), tc.secret) {
				t.Fatalf("the error shows the key: %v", err)
			}
			if tc.loadErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.loadErr) {
					t.Fatalf("err = %v, want %q", err, tc.loadErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			opts := Model(cfg, getenv, false, 0).Options
			err = opts.CheckKeys()
			var ke *llm.KeyError
			switch {
			case tc.keyErr == "" && err != nil:
				t.Errorf("CheckKeys: %v", err)
			case tc.keyErr != "" && (!errors.As(err, &ke) || !strings.Contains(err.Error(), tc.keyErr)):
				t.Errorf("CheckKeys: %v, want %q", err, tc.keyErr)
			case tc.keyErr != "" && strings.Count(err.Error(), "OPENAI_API_KEY") != 1:
				t.Errorf("CheckKeys names the endpoint's variable once per endpoint, not per model: %v", err)
			}
			if got := len(opts.Keyless()) == 2; got != tc.keyless {
				t.Errorf("keyless %v (%v), want %v", got, opts.Keyless(), tc.keyless)
			}
			for _, ep := range opts.Endpoints {
				if tc.secret != "" && string(ep.APIKey) != tc.secret {
					t.Errorf("%s: the key was not read from its variable", ep.Name)
				}
			}
		})
	}
}
