package progress_test

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/progress"
)

// TestStartFromCarriesCounts: a meter taken up again after a pause (a
// stage's next pass once its batches are in) counts on from where the last
// one stopped, against the same total, and its rate counts only what it
// saw done itself.
func TestStartFromCarriesCounts(t *testing.T) {
	tests := []struct {
		name   string
		total  int64
		passes []int64 // items each pass commits
		el     time.Duration
		want   []string // in the last pass's line
	}{
		{name: "one pass", total: 15, passes: []int64{15}, el: 5 * time.Second,
			want: []string{"curate: 15/15 tasks (100.0%)", "3.0/s"}},
		{name: "three passes", total: 15, passes: []int64{5, 7, 3}, el: 3 * time.Second,
			want: []string{"curate: 15/15 tasks (100.0%)", "1.0/s"}},
		{name: "a pass that commits nothing", total: 15, passes: []int64{10, 0}, el: time.Second,
			want: []string{"curate: 10/15 tasks (66.7%)", "0.0/s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c progress.Counts
			var m *progress.Meter
			for _, n := range tc.passes {
				m = progress.StartFrom(io.Discard, "curate", "tasks", tc.total, c)
				m.Add(n, 2*n)
				m.AddCost(0.5)
				m.Stop()
				c = m.Counts()
			}
			var sum int64
			for _, n := range tc.passes {
				sum += n
			}
			if want := (progress.Counts{Done: sum, Tokens: 2 * sum, USD: 0.5 * float64(len(tc.passes))}); c != want {
				t.Errorf("counts %+v, want %+v", c, want)
			}
			line := m.Line(c.Done, tc.el)
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
		})
	}
}

// TestTerminalWidthNotATerminal: a buffer or a plain file has no width, so
// callers keep their own default.
func TestTerminalWidthNotATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []io.Writer{&strings.Builder{}, f} {
		if cols, ok := progress.TerminalWidth(w); ok {
			t.Errorf("TerminalWidth(%T) = %d, true; want not a terminal", w, cols)
		}
	}
}
