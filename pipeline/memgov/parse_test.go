package memgov_test

import (
	"testing"

	"github.com/ac3/ac3/pipeline/memgov"
)

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"160MiB", 160 << 20, false},
		{"2GiB", 2 << 30, false},
		{"1.5gib", 3 << 29, false},
		{"512MB", 512e6, false},
		{"1GB", 1e9, false},
		{"100000000", 1e8, false},
		{"100000000B", 1e8, false},
		{"off", 0, false},
		{"OFF", 0, false},
		{"0", 0, false},
		{"1MiB", 0, true}, // too small to run in
		{"-5GiB", 0, true},
		{"lots", 0, true},
		{"GiB", 0, true},
		{"", 0, true},
	} {
		got, err := memgov.ParseLimit(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseLimit(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
