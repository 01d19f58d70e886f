package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/run"
)

func TestInputFilterDedupe(t *testing.T) {
	const head = "run: {db: x.db}\ninput:\n  files: [a.jsonl]\n"
	for _, tc := range []struct {
		name   string
		filter string
		dedupe bool
		near   *run.NearDedupe
		err    string
	}{
		{name: "absent", filter: "{}"},
		{name: "false", filter: "{dedupe: false}"},
		{name: "true: exact", filter: "{dedupe: true}", dedupe: true},
		{name: "exact", filter: "{dedupe: exact}", dedupe: true},
		{name: "near, defaults", filter: "{dedupe: near}", dedupe: true, near: &run.NearDedupe{}},
		{name: "near, tuned", filter: "{dedupe: near, near_threshold: 0.9, near_shingle: 5}", dedupe: true, near: &run.NearDedupe{Threshold: 0.9, ShingleWords: 5}},
		{name: "a threshold without near", filter: "{dedupe: true, near_threshold: 0.9}", err: "input.filter.near_threshold: applies to near dedupe only"},
		{name: "a shingle without near", filter: "{near_shingle: 2}", err: "input.filter.near_shingle: applies to near dedupe only"},
		{name: "a list", filter: "{dedupe: [near]}", err: "line 4: input.filter.dedupe: a list where true, false, exact or near is expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadYAML(t, head+"  filter: "+tc.filter+"\n")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f := cfg.filter()
			if f.Dedupe != tc.dedupe || !reflect.DeepEqual(f.Near, tc.near) {
				t.Errorf("dedupe %v, near %+v; want %v, %+v", f.Dedupe, f.Near, tc.dedupe, tc.near)
			}
		})
	}
}

// A threshold out of range is named by its key, through FilterKeys.
func TestInputFilterNearThresholdNamedByKey(t *testing.T) {
	cfg, err := loadYAML(t, "run: {db: x.db}\ninput:\n  files: [a.jsonl]\n  filter: {dedupe: near, near_threshold: 1.5}\n")
	if err != nil {
		t.Fatal(err)
	}
	plan, _, err := cfg.Plan(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Execute(t.Context(), plan, run.Options{})
	if err = run.FilterError(err, FilterKeys); err == nil || !strings.Contains(err.Error(), "input.filter.near_threshold: 1.5") {
		t.Fatalf("error %v, want one naming input.filter.near_threshold", err)
	}
}
