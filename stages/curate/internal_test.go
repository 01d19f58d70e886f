package curate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
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
			tc := NewTokenCache(c, counter)
			for _, w := range []int{1, 2, 3, 7, 19, 40, 41, 64, 99, 150, 151, 300, 2} {
				got, ok := tc.fillPrefix(k, w)
				if want := counter.Count(fillerText(c.ID, k, w)); got != want || !ok {
					t.Errorf("%s, %s message %d, %d words: fillPrefix %d (%v), whole count %d", enc, c.ID, k, w, got, ok, want)
				}
			}
		}
	}
}

// TestFillerWordsMatchWholeCounts checks the per-word filler table against
// tokenizing the text, for every encoding: short and long cuts (past
// tokens.MaxRun, where Count cuts the text itself), and every sentence of the
// corpus at the start of a text.
func TestFillerWordsMatchWholeCounts(t *testing.T) {
	for _, enc := range tokens.Encodings() {
		counter, err := tokens.New(enc)
		if err != nil {
			t.Fatal(err)
		}
		fw := newFillerWords(counter)
		starts := map[int]bool{}
		for id := range 300 {
			cid := fmt.Sprintf("c%d", id)
			for k := range fillerStream(cid, id%7) {
				starts[k] = true
				break
			}
			lens := []int{0, 1, 2, 3, 5, 17, 60, 250}
			if id < 6 {
				lens = append(lens, 1500)
			}
			for _, w := range lens {
				if got, want := fw.count(cid, id%7, w), counter.Count(fillerText(cid, id%7, w)); got != want {
					t.Fatalf("%s, %s message %d, %d words: table %d, counting the text %d", enc, cid, id%7, w, got, want)
				}
			}
		}
		if len(starts) != len(fillerSentences) {
			t.Fatalf("%s: %d of %d sentences began a text; use more conversations", enc, len(starts), len(fillerSentences))
		}
	}
}
