package tokens

import (
	"slices"
	"strings"
	"testing"
)

func TestCutsOnlyLongRuns(t *testing.T) {
	c, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	// Long text with short runs: no cuts, so Count is the exact count.
	var sb strings.Builder
	for i := range 3000 {
		sb.WriteString("word" + strings.Repeat(" ", i%5) + "12345,\n")
	}
	text := sb.String()
	if got := slices.Collect(cuts(text)); len(got) != 0 {
		t.Errorf("cuts in text without long runs: %v", got)
	}
	if got, want := c.Count(text), len(c.enc.EncodeOrdinary(text)); got != want {
		t.Errorf("Count = %d, exact %d", got, want)
	}
	// Digits never form a long run: the encodings take them three at a time.
	if got := slices.Collect(cuts(strings.Repeat("7", 5000))); len(got) != 0 {
		t.Errorf("cuts in a digit run: %v", got)
	}
	// A run of 2.5×MaxRun letters is cut twice, at whole characters.
	long := "x " + strings.Repeat("é", MaxRun*5/2) + " y"
	got := slices.Collect(cuts(long))
	want := []int{2 + 2*MaxRun, 2 + 4*MaxRun}
	if !slices.Equal(got, want) {
		t.Errorf("cuts = %v, want %v", got, want)
	}
}
