package run

import (
	"strings"
	"testing"
)

// TestLiCCheck: settings the LiC replay cannot run are refused, naming the
// key, before anything is sent.
func TestLiCCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    LiC
		want string // "" when it is accepted
	}{
		{"paper", LiC{Strategies: []string{"fc"}, Mode: "lic", Traces: "one", Replicates: 5, MinFailures: 3}, ""},
		{"all traces", LiC{Strategies: []string{"fc"}, Traces: "all"}, ""},
		{"traces", LiC{Strategies: []string{"fc"}, Traces: "most"}, "lic.traces"},
		{"mode", LiC{Strategies: []string{"fc"}, Mode: "chatty"}, "lic.mode"},
		{"min failures", LiC{Strategies: []string{"fc"}, Replicates: 2, MinFailures: 3}, "lic.min_failures"},
		{"unscored", LiC{Strategies: []string{"fc"}, Unscored: "failure"}, ""},
		{"unscored value", LiC{Strategies: []string{"fc"}, Unscored: "fail"}, "lic.unscored"},
		{"code four", LiC{Strategies: []string{"fc"}, Replicates: 5, MinFailures: 3, TaskReplicates: map[string]int{"code": 4}}, ""},
		{"task name", LiC{Strategies: []string{"fc"}, Replicates: 5, TaskReplicates: map[string]int{"coding": 4}}, "lic.task_replicates: unknown task \"coding\""},
		{"task count", LiC{Strategies: []string{"fc"}, Replicates: 5, TaskReplicates: map[string]int{"code": 0}}, "lic.task_replicates.code"},
		{"task below min failures", LiC{Strategies: []string{"fc"}, Replicates: 5, MinFailures: 3, TaskReplicates: map[string]int{"code": 2}}, "task code has only 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.check()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("check: %v, want %q", err, tc.want)
			}
		})
	}
}
