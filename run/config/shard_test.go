package config

import (
	"strings"
	"testing"
)

func TestShardLimitsKey(t *testing.T) {
	for _, tc := range []struct {
		value, want, err string
	}{
		{"", "", ""},
		{"divide", "divide", ""},
		{"whole", "whole", ""},
		{"half", "", "run.shard_limits \"half\": want divide or whole"},
	} {
		db := "r.db"
		if tc.value != "" {
			db += ", shard_limits: " + tc.value
		}
		cfg, err := Load(writeConfig(t, db, "  classify: {annotator: heuristic}"), func(string) string { return "" })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.value, err)
		}
		p, _, err := cfg.Plan(func(string) string { return "" })
		if err != nil || p.ShardLimits != tc.want {
			t.Errorf("%q: plan shard limits %q, %v; want %q", tc.value, p.ShardLimits, err, tc.want)
		}
	}
}
