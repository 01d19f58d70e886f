package curate

import (
	"strings"
	"testing"
)

func TestNoteForDefaultPlaceholder(t *testing.T) {
	if got := noteFor(DefaultPlaceholder); got != DefaultNote {
		t.Errorf("noteFor(DefaultPlaceholder) = %q, want DefaultNote", got)
	}
	if got := noteFor("[x]"); got == DefaultNote || !strings.Contains(got, `"[x]"`) {
		t.Errorf("noteFor did not substitute the placeholder: %q", got)
	}
}
