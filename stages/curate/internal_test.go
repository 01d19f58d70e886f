package curate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
)

func TestNoteForDefaultPlaceholder(t *testing.T) {
	if got := noteFor(DefaultPlaceholder); got != DefaultNote {
		t.Errorf("noteFor(DefaultPlaceholder) = %q, want DefaultNote", got)
	}
	if got := noteFor("[x]"); got == DefaultNote || !strings.Contains(got, `"[x]"`) {
		t.Errorf("noteFor did not substitute the placeholder: %q", got)
	}
}

// fillPrefix, which counts filler cuts from one tokenization of a longer
// cut, must give every cut's own count, in every encoding, and find every
// cut a token boundary; otherwise filler contexts would be counted wrong.
func TestFillPrefixMatchesWholeCounts(t *testing.T) {
	for _, enc := range tokens.Encodings() {
		counter, err := tokens.New(enc)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 8 {
			c := &conv.Conversation{ID: fmt.Sprintf("conversation-%d", k), Messages: []conv.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}}
			tc := NewWorkspace(c, counter)
			for _, w := range []int{1, 2, 3, 7, 19, 40, 41, 64, 99, 150, 151, 300, 2} {
				got, ok := tc.fillPrefix(k, w)
				if want := counter.Count(curated.FillerText(c.ID, k, w)); got != want || !ok {
					t.Errorf("%s, %s message %d, %d words: fillPrefix %d (%v), whole count %d", enc, c.ID, k, w, got, ok, want)
				}
			}
		}
	}
}
