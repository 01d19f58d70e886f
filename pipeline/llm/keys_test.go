package llm_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// An endpoint that names its key variable and finds it empty sends nothing
// — a call, a ping, the batch API — and every one of them says which
// variable (a fatal error, which stops a run); Options.CheckKeys says the
// same before a run (a plain error). An endpoint that names none is sent no
// key, and a server that wants one says so in the 401's hint.
func TestEndpointKeys(t *testing.T) {
	const from = "config run.yaml: line 9: endpoints.openai.api_key_env"
	tests := []struct {
		name      string
		serverKey string // the only key the server takes; "" takes any request
		keyEnv    string
		key       llm.Secret
		from      string
		keyErr    string // the *KeyError of every call and of CheckKeys; "" for none
		callErr   string // the error of a call that was sent; "" for none
		auth      string // the Authorization header the server saw
	}{
		{name: "variable unset", keyEnv: "TEST_API_KEY", from: from,
			keyErr: from + ": TEST_API_KEY is not set or is empty, so nothing is sent; export it, or remove api_key_env if the server needs no key"},
		{name: "variable unset, outside a config", keyEnv: "TEST_API_KEY",
			keyErr: "endpoint test: its API key variable TEST_API_KEY is not set or is empty, so nothing is sent"},
		{name: "no key variable: no key is sent"},
		{name: "no key variable, and the server wants one", serverKey: testKey,
			callErr: "endpoint test: 401 unauthorized: no API key was sent: name the variable that holds it (api_key_env in the config, or OPENAI_API_KEY)"},
		{name: "the key from its variable", serverKey: testKey, keyEnv: "TEST_API_KEY", key: testKey, auth: "Bearer " + testKey},
		{name: "a key given without a variable", serverKey: testKey, key: testKey, auth: "Bearer " + testKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := func(e *llm.Endpoint) { e.APIKey, e.APIKeyEnv, e.APIKeyFrom = tc.key, tc.keyEnv, tc.from }
			h := newHarness(t, llmtest.Options{Key: tc.serverKey}, set, nil)
			ctx := testCtx(t, 10*time.Second)
			ep := llm.Endpoint{Name: "test"}
			set(&ep)

			checked := llm.Options{Endpoints: []llm.Endpoint{ep}}.CheckKeys()
			_, callErr := h.client.Call(ctx, userReq("q"))
			_, pingErr := h.client.Ping(ctx, "judge")
			if tc.keyErr == "" {
				if checked != nil {
					t.Errorf("CheckKeys: %v", checked)
				}
				for _, err := range []error{callErr, pingErr} {
					if (err == nil) != (tc.callErr == "") || err != nil && !strings.Contains(err.Error(), tc.callErr) {
						t.Errorf("call: %v, want %q", err, tc.callErr)
					}
				}
				for _, c := range h.srv.Calls() {
					if got := c.Header.Get("Authorization"); got != tc.auth {
						t.Errorf("Authorization %q, want %q", got, tc.auth)
					}
				}
				// A refused key fails the endpoint's later calls unsent.
				if want := map[bool]int{true: 2, false: 1}[tc.callErr == ""]; h.srv.Count() != want {
					t.Errorf("%d requests reached the server, want %d", h.srv.Count(), want)
				}
				return
			}

			api, err := h.client.BatchAPI("test")
			if err != nil {
				t.Fatal(err)
			}
			_, uploadErr := api.Upload(ctx, "in.jsonl", strings.NewReader("{}\n"))
			var ke *llm.KeyError
			if !errors.As(checked, &ke) || ke.Var != tc.keyEnv || checked.Error() != tc.keyErr || llm.IsFatal(checked) {
				t.Errorf("CheckKeys: %v, want the plain *KeyError %q", checked, tc.keyErr)
			}
			for what, err := range map[string]error{"call": callErr, "ping": pingErr, "batch upload": uploadErr} {
				if !errors.As(err, &ke) || !llm.IsFatal(err) || !strings.Contains(err.Error(), tc.keyErr) {
					t.Errorf("%s: %v, want a fatal *KeyError %q", what, err, tc.keyErr)
				}
			}
			if n := h.srv.Requests(); n != 0 {
				t.Errorf("%d requests reached the server without the key", n)
			}
		})
	}
}

// CheckKeys looks at the endpoints the roles use (all of them when no role
// is bound), names each unset variable once however many models share its
// endpoint, and Keyless names the endpoints sent no key.
func TestCheckKeysCoversTheEndpointsTheRolesUse(t *testing.T) {
	ep := func(name, keyEnv string, key llm.Secret, from string) llm.Endpoint {
		return llm.Endpoint{Name: name, BaseURL: "http://127.0.0.1:1/v1", Model: "m", APIKeyEnv: keyEnv, APIKey: key, APIKeyFrom: from}
	}
	unsetA := ep("a", "A_KEY", "", "endpoints.x.api_key_env")
	unsetA2 := ep("a2", "A_KEY", "", "endpoints.x.api_key_env")
	unsetB := ep("b", "B_KEY", "", "endpoints.y.api_key_env")
	set := ep("c", "C_KEY", "k", "")
	keyless := ep("d", "", "", "")
	tests := []struct {
		name    string
		opts    llm.Options
		want    string // the error; "" for none
		keyless []string
	}{
		{name: "no role: every endpoint", opts: llm.Options{Endpoints: []llm.Endpoint{set, unsetA}},
			want: "endpoints.x.api_key_env: A_KEY is not set or is empty, so nothing is sent; export it, or remove api_key_env if the server needs no key"},
		{name: "an endpoint no role uses needs no key", opts: llm.Options{Endpoints: []llm.Endpoint{unsetA, set},
			Roles: map[string]llm.RoleBinding{"judge": {Endpoint: "c"}}}},
		{name: "two models of one endpoint: named once", opts: llm.Options{Endpoints: []llm.Endpoint{unsetA, unsetA2},
			Roles: map[string]llm.RoleBinding{"judge": {Endpoint: "a"}, "respondent": {Endpoint: "a2"}}},
			want: "endpoints.x.api_key_env: A_KEY is not set or is empty, so nothing is sent; export it, or remove api_key_env if the server needs no key"},
		{name: "two endpoints: both named", opts: llm.Options{Endpoints: []llm.Endpoint{unsetA, unsetB, keyless}},
			want: "endpoints.x.api_key_env: A_KEY is not set or is empty, so nothing is sent; export it, or remove api_key_env if the server needs no key; " +
				"endpoints.y.api_key_env: B_KEY is not set or is empty, so nothing is sent; export it, or remove api_key_env if the server needs no key",
			keyless: []string{"d"}},
		{name: "keyless endpoints", opts: llm.Options{Endpoints: []llm.Endpoint{keyless, set, ep("e", "", "", "")},
			Roles: map[string]llm.RoleBinding{"judge": {Endpoint: "d"}, "respondent": {Endpoint: "c"}}},
			keyless: []string{"d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.CheckKeys()
			if got := errString(err); got != tc.want {
				t.Errorf("CheckKeys: %q, want %q", got, tc.want)
			}
			var ke *llm.KeyError
			if tc.want != "" && !errors.As(err, &ke) {
				t.Errorf("CheckKeys: %T is not a *KeyError", err)
			}
			if got := strings.Join(tc.opts.Keyless(), ","); got != strings.Join(tc.keyless, ",") {
				t.Errorf("Keyless: %q, want %q", got, tc.keyless)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Without OPENAI_API_KEY the environment's endpoint names no key variable,
// so it is a keyless endpoint, not one whose key is missing.
func TestDefaultFromEnvKey(t *testing.T) {
	tests := []struct {
		env    map[string]string
		keyEnv string
	}{
		{map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, ""},
		{map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "OPENAI_API_KEY": testKey}, "OPENAI_API_KEY"},
	}
	for _, tc := range tests {
		ep, ok := llm.DefaultFromEnv(func(k string) string { return tc.env[k] })
		if !ok || ep.APIKeyEnv != tc.keyEnv || ep.CheckKey() != nil {
			t.Errorf("%v: endpoint %v with key variable %q (CheckKey %v), want %q", tc.env, ep, ep.APIKeyEnv, ep.CheckKey(), tc.keyEnv)
		}
	}
}
