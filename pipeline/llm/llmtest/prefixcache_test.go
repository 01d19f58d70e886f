package llmtest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// cachedOf posts a chat request and returns the usage the server reports.
func cachedOf(t *testing.T, url, model string, msgs ...llmtest.Message) (prompt, cached int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "messages": msgs})
	resp, err := http.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			Prompt  int `json:"prompt_tokens"`
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Usage.Prompt, out.Usage.Details.Cached
}

// TestPrefixCache sends its cases in order to one server: each case sees
// the cache the earlier ones left.
func TestPrefixCache(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	sys := llmtest.Message{Role: "system", Content: "fixed instructions"}
	history := strings.Repeat("a long shared conversation. ", 400) // 11,200 bytes, 2,800 tokens
	tail := func(s string) llmtest.Message { return llmtest.Message{Role: "user", Content: history + s} }
	// The shared prefix: the model, the system message and the history,
	// counted at 4 bytes a token, in whole blocks from 1,024 tokens.
	shared := (len("m\x00") + len("\x00system\x00fixed instructions\x00") + len("\x00user\x00") + len(history)) / 4
	wantShared := 1024 + (shared-1024)/128*128
	for _, tc := range []struct {
		name       string
		model      string
		msgs       []llmtest.Message
		wantCached int
	}{
		{"the first request finds nothing", "m", []llmtest.Message{sys, tail("candidate one")}, 0},
		{"a request sharing the history is served up to its last whole block", "m", []llmtest.Message{sys, tail("candidate two")}, wantShared},
		{"the same request again is served as far as whole blocks go", "m", []llmtest.Message{sys, tail("candidate two")}, wantShared},
		{"another model has a cache of its own", "other", []llmtest.Message{sys, tail("candidate one")}, 0},
		{"a change near the start shares nothing", "m", []llmtest.Message{{Role: "system", Content: "other instructions"}, tail("candidate one")}, 0},
		{"a short prompt is never served", "m", []llmtest.Message{sys, {Role: "user", Content: "hi"}}, 0},
	} {
		prompt, cached := cachedOf(t, srv.URL, tc.model, tc.msgs...)
		if cached != tc.wantCached || cached > prompt {
			t.Errorf("%s: cached %d of %d, want %d", tc.name, cached, prompt, tc.wantCached)
		}
	}
	if calls := srv.Calls(); calls[1].Cached != wantShared {
		t.Errorf("the log says %d cached, want %d", calls[1].Cached, wantShared)
	}
}

func TestPrefixCacheOffAndWindow(t *testing.T) {
	long := func(s string) []llmtest.Message {
		return []llmtest.Message{{Role: "user", Content: s + strings.Repeat(" filler", 1000)}}
	}
	for _, tc := range []struct {
		name string
		opts llmtest.Options
		sent []string // first words of the requests before the probe
		want bool     // the probe ("x") is served from the cache
	}{
		{"on by default", llmtest.Options{}, []string{"x"}, true},
		{"turned off", llmtest.Options{NoPrefixCache: true}, []string{"x"}, false},
		{"forgotten past the window", llmtest.Options{CacheWindow: 2}, []string{"x", "y", "z"}, false},
		{"remembered within the window", llmtest.Options{CacheWindow: 3}, []string{"x", "y", "z"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, tc.opts)
			for _, w := range tc.sent {
				cachedOf(t, srv.URL, "m", long(w)...)
			}
			if _, cached := cachedOf(t, srv.URL, "m", long("x")...); (cached > 0) != tc.want {
				t.Errorf("cached %d", cached)
			}
		})
	}
}
