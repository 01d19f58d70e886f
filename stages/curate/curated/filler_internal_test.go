package curated

import (
	"fmt"
	"testing"

	"github.com/ac3/ac3/pipeline/tokens"
)

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
		fw := NewFillerWords(counter)
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
				if got, want := fw.Count(cid, id%7, w), counter.Count(FillerText(cid, id%7, w)); got != want {
					t.Fatalf("%s, %s message %d, %d words: table %d, counting the text %d", enc, cid, id%7, w, got, want)
				}
			}
		}
		if len(starts) != len(fillerSentences) {
			t.Fatalf("%s: %d of %d sentences began a text; use more conversations", enc, len(starts), len(fillerSentences))
		}
	}
}
