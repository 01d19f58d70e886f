package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestPollutionOnGeneratedReplies(t *testing.T) {
	tests := []struct {
		name, section string
		dataset       bool
		replies       string // fmt of the ReviewReplies, "" when nil, or the error
	}{
		{"dataset by default", "  pollution: {}", true, ""},
		{"generated only", "  pollution: {on: [generated]}", false, "[] 0 false"},
		{"both, narrowed", "  pollution: {on: [dataset, generated], strategies: [fc, filler], samples: 1}", true, "[fc filler] 1 true"},
		{"responses is generated", "  pollution: {on: [responses]}", false, "[] 0 false"},
		{"strategies need generated", "  pollution: {on: [dataset], strategies: [fc]}", false, "add generated to on"},
		{"negative samples", "  pollution: {on: [generated], samples: -1}", false, "stages.pollution.samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configFrom(t, writeConfig(t, "x.db", tc.section))
			rr, err := cfg.Replies()
			got := ""
			switch {
			case err != nil:
				got = err.Error()
			case rr != nil:
				got = fmt.Sprintf("%v %d %v", rr.Strategies, rr.Samples, rr.Dataset)
				if rr.Strategies == nil {
					got = fmt.Sprintf("[] %d %v", rr.Samples, rr.Dataset)
				}
			}
			if (tc.replies == "" && got != "") || !strings.Contains(got, tc.replies) {
				t.Errorf("Replies: got %q, want %q", got, tc.replies)
			}
			if err != nil {
				return
			}
			a, _, err := cfg.Annotate()
			if err != nil || a.Pollution != tc.dataset {
				t.Errorf("Annotate: dataset review %v (err %v), want %v", a.Pollution, err, tc.dataset)
			}
			p, _, err := cfg.Plan(func(string) string { return "" })
			if err != nil || (p.Replies != nil) != (tc.replies != "") {
				t.Errorf("Plan: replies %+v (err %v)", p.Replies, err)
			}
		})
	}
}
