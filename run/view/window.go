package view

import "time"

// windows walks the run forward in ranges of seqs for one page, sized so
// the page keeps to its time budget: each range is twice the last, unless
// the pace so far says that would overrun what is left of the budget.
type windows struct {
	deadline time.Time
	width    int64
	max      int64
	started  time.Time // when the current range began
}

func newWindows(budget time.Duration, first, max int64) *windows {
	now := time.Now()
	return &windows{deadline: now.Add(budget), width: first, max: max, started: now}
}

// next is the end of the range after pos (never past last).
func (w *windows) next(pos, last int64) int64 {
	w.started = time.Now()
	return min(pos+w.width, last)
}

// more records that the range just read is done and reports whether the
// budget allows another; it sizes that one.
func (w *windows) more() bool {
	now := time.Now()
	left := w.deadline.Sub(now)
	if left <= 0 {
		return false
	}
	took := now.Sub(w.started)
	grow := min(w.width*2, w.max)
	if took > 0 {
		// At this range's pace, what fits in most of the time left.
		fit := int64(float64(w.width) * 0.8 * float64(left) / float64(took))
		grow = min(grow, fit)
	}
	w.width = max(grow, 64)
	return true
}
