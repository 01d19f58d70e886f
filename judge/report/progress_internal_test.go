package report

import (
	"strings"
	"testing"
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
