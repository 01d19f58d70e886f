package config

import (
	"strings"
	"testing"
)

// TestWithCurate: settings given by key path (the command line's curate
// flags) land where the same keys of the file do, merge with the file's
// section, and go through the file's checks.
func TestWithCurate(t *testing.T) {
	file := configFrom(t, writeConfig(t, "x.db", `  curate:
    strategies: [gated-reset]
    gated_reset: {floor: 1}
    memory: {regime: offline, include_learning: true}`))
	tests := []struct {
		name     string
		base     *File
		settings map[string]any
		check    func(t *testing.T, f *File)
		wantErr  string
	}{
		{
			name:     "no file: the flag alone over the defaults",
			settings: map[string]any{"gated_reset.cap": 5, "replay": "prefix"},
			check: func(t *testing.T, f *File) {
				s, err := f.AC3()
				if err != nil {
					t.Fatal(err)
				}
				if g := s.Gates["gated-reset"]; g.Cap != 5 || g.Floor != 2 {
					t.Errorf("gate = %+v, want cap 5 over the default floor 2", g)
				}
				if s.Replay != "prefix" {
					t.Errorf("replay = %q", s.Replay)
				}
			},
		},
		{
			name:     "a flag merges into the file's section",
			base:     file,
			settings: map[string]any{"gated_reset.cap": 4, "memory.regime": "online"},
			check: func(t *testing.T, f *File) {
				s, err := f.AC3()
				if err != nil {
					t.Fatal(err)
				}
				if g := s.Gates["gated-reset"]; g.Cap != 4 || g.Floor != 1 {
					t.Errorf("gate = %+v, want the file's floor 1 and the flag's cap 4", g)
				}
				if s.Memory != "online" || !s.IncludeLearning {
					t.Errorf("memory = %q, include_learning %v; want the flag's regime and the file's include_learning", s.Memory, s.IncludeLearning)
				}
				// The file itself is left as it was.
				if s, _ := file.AC3(); s.Memory != "offline" || s.Gates["gated-reset"].Cap != 3 {
					t.Errorf("the base file changed: %+v", s)
				}
			},
		},
		{
			name:     "a flag's value is checked as the file's would be",
			settings: map[string]any{"replay": "rollout"},
			wantErr:  "stages.curate.replay",
		},
		{
			name:     "a bad memory regime",
			settings: map[string]any{"memory.regime": "sometimes"},
			wantErr:  "memory regime",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := WithCurate(tc.base, tc.settings)
			if err == nil {
				_, err = f.AC3()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, f)
		})
	}
}
