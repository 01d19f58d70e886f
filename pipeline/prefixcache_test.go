package pipeline_test

import (
	"testing"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/llm"
)

// A dry run's prompt-cache estimate: each call shares the longest run of
// leading segments an earlier call of its role began with.
func TestPrefixCacheShared(t *testing.T) {
	seg := func(keys ...string) []pipeline.Segment {
		var out []pipeline.Segment
		for _, k := range keys {
			out = append(out, pipeline.Segment{Key: k, Tokens: 100})
		}
		return out
	}
	p := pipeline.NewPrefixCache()
	for _, tc := range []struct {
		name string
		call pipeline.Call
		want int
	}{
		{"the first call shares nothing", pipeline.Call{Role: "judge", Prefix: seg("sys", "u1", "a1", "u2", "X")}, 0},
		{"the other order shares the history", pipeline.Call{Role: "judge", Prefix: seg("sys", "u1", "a1", "u2", "Y")}, 400},
		{"the next turn shares the history so far", pipeline.Call{Role: "judge", Prefix: seg("sys", "u1", "a1", "u2", "a2", "u3", "X")}, 400},
		{"a run is only shared from the start", pipeline.Call{Role: "judge", Prefix: seg("other", "u1", "a1")}, 0},
		{"another role has its own", pipeline.Call{Role: "respondent", Prefix: seg("sys", "u1")}, 0},
		{"no prefix, nothing shared", pipeline.Call{Role: "judge"}, 0},
	} {
		if got := p.Shared(tc.call); got != tc.want {
			t.Errorf("%s: shared %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCacheableTokens(t *testing.T) {
	for _, tc := range []struct{ shared, want int }{{0, 0}, {1023, 0}, {1024, 1024}, {1151, 1024}, {1152, 1152}, {5000, 4992}} {
		if got := llm.CacheableTokens(tc.shared); got != tc.want {
			t.Errorf("CacheableTokens(%d) = %d, want %d", tc.shared, got, tc.want)
		}
	}
}
