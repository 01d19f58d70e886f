package run_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run"
)

// Status shows, per role and stage, the prompt tokens the endpoint's prompt
// cache served of those sent, and their total under the spend.
func TestStatusShowsEndpointCachedTokens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		llm     []ledger.LLMUsage
		want    []string
		notWant []string
	}{
		{
			name: "some served from the prompt cache",
			llm: []ledger.LLMUsage{
				{Role: "judge", Model: "m", Stage: "judge", Calls: 4, PromptTokens: 8000, SentPromptTokens: 8000, SentCachedTokens: 5120, CostUSD: 0.01},
				{Role: "respondent", Model: "r", Stage: "respond", Calls: 2, PromptTokens: 2000, SentPromptTokens: 2000, CostUSD: 0.001},
			},
			want: []string{"endpoint-cached", "5120 (64%)", "0 (0%)", "served 5120 of the 10000 prompt tokens sent (51%)"},
		},
		{
			name:    "none served",
			llm:     []ledger.LLMUsage{{Role: "judge", Model: "m", Stage: "judge", Calls: 1, PromptTokens: 100, SentPromptTokens: 100}},
			want:    []string{"endpoint-cached", "0 (0%)"},
			notWant: []string{"prompt caches served"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			run.WriteStatus(&b, ledger.Status{LLM: tc.llm}, nil, time.Unix(0, 0))
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("status lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("status says %q:\n%s", w, b.String())
				}
			}
		})
	}
}
