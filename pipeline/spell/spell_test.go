package spell

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"config", "c", "dry-run", "json", "workers", "window", "wide", "help", "h"}
	tests := []struct{ typed, want string }{
		{"confg", "config"},
		{"cnofig", "config"},
		{"CONFIG", "config"},
		{"dryrun", "dry-run"},
		{"dry", "dry-run"},
		{"w", ""},         // one letter: too little to guess from
		{"wo", "workers"}, // the start of one flag
		{"wi", ""},        // the start of two
		{"jsn", "json"},
		{"budget", ""},
	}
	for _, tc := range tests {
		if got := Nearest(tc.typed, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}
