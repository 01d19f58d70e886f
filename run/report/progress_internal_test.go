package report

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFailureReason(t *testing.T) {
	tests := []struct{ err, want string }{
		{"", "no error recorded"},
		{"  \n", "no error recorded"},
		{`parsing model answer (3 tries): unknown outcome "draw"`, `parsing model answer (N tries): unknown outcome "…"`},
		{`parsing model answer (2 tries): unknown outcome "maybe so"`, `parsing model answer (N tries): unknown outcome "…"`},
		{"endpoint judge: 400 bad request: context length 131072 exceeded", "endpoint judge: N bad request: context length N exceeded"},
		{"tag `verdict` missing\n\tafter   'x'", `tag "…" missing after "…"`},
	}
	for _, tt := range tests {
		if got := failureReason(tt.err); got != tt.want {
			t.Errorf("failureReason(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
	long := failureReason(strings.Repeat("é", 200))
	if len(long) > 160+len("…") {
		t.Errorf("reason of %d bytes", len(long))
	}
	if got := clip("ééé", 3); got != "é…" {
		t.Errorf("clip cut inside a rune: %q", got)
	}
}

// Any error text gives a short reason, valid UTF-8 when the text was, and
// the same reason again (a reason is its own reason).
func FuzzFailureReason(f *testing.F) {
	for _, s := range []string{"", "parsing model answer (3 tries): unknown outcome \"draw\"", "endpoint x: 429 too many requests", "é\"é", "`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := failureReason(s)
		if len(r) > 160+len("…") {
			t.Errorf("reason of %d bytes", len(r))
		}
		if utf8.ValidString(s) && !utf8.ValidString(r) {
			t.Errorf("reason %q of valid text is not valid UTF-8", r)
		}
		if r2 := failureReason(r); r2 != r && len(r) < 160 {
			t.Errorf("reason %q gives reason %q", r, r2)
		}
	})
}
