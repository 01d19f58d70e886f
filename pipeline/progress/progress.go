// Package progress shows how a long job is going: a one-line bar redrawn in
// place on a terminal (done/total, rate, ETA, tokens, dollars), or a plain log
// line every few seconds when output goes to a file or a pipe.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// Meter counts work done and draws it. Add and AddCost may be called from any
// goroutine.
type Meter struct {
	w        io.Writer
	label    string
	unit     string
	total    int64
	tty      bool
	interval time.Duration

	done   atomic.Int64
	tokens atomic.Int64
	cents  atomic.Int64 // hundredths of a cent, to add atomically
	start  time.Time
	// base is what was done before start (StartFrom): counted in done,
	// not in the rate.
	base int64

	stop chan struct{}
	wg   sync.WaitGroup
}

// Start begins showing progress of a job of total items on w (a terminal
// gets a redrawn bar; anything else gets a line every interval). It returns
// a Meter whose Stop must be called to end the display.
func Start(w io.Writer, label, unit string, total int64) *Meter {
	m := newMeter(w, label, unit, total)
	m.run()
	return m
}

func newMeter(w io.Writer, label, unit string, total int64) *Meter {
	m := &Meter{w: w, label: label, unit: unit, total: total, start: time.Now(), stop: make(chan struct{}), interval: 5 * time.Second}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		m.tty, m.interval = true, 200*time.Millisecond
	}
	return m
}

func (m *Meter) run() {
	m.wg.Add(1)
	go m.loop()
}

// Counts is what a meter has counted.
type Counts struct {
	Done, Tokens int64
	USD          float64
}

// StartFrom is Start for a job taken up again after a pause (a stage's next
// pass, once the batches it waited for are in): the meter starts at c, and
// its rate and ETA count only what is done from now on.
func StartFrom(w io.Writer, label, unit string, total int64, c Counts) *Meter {
	m := newMeter(w, label, unit, total)
	m.base = c.Done
	m.done.Store(c.Done)
	m.tokens.Store(c.Tokens)
	m.cents.Store(int64(c.USD * 10000))
	m.run()
	return m
}

// Counts returns what m has counted so far.
func (m *Meter) Counts() Counts {
	return Counts{Done: m.done.Load(), Tokens: m.tokens.Load(), USD: float64(m.cents.Load()) / 10000}
}

// Add records n more items done and tokens more tokens.
func (m *Meter) Add(n, tokens int64) {
	m.done.Add(n)
	m.tokens.Add(tokens)
}

// AddCost records spend in US dollars.
func (m *Meter) AddCost(usd float64) { m.cents.Add(int64(usd * 10000)) }

// Stop draws the final state and ends the display. It blocks until the
// drawing goroutine has exited.
func (m *Meter) Stop() {
	close(m.stop)
	m.wg.Wait()
	m.draw(true)
}

func (m *Meter) loop() {
	defer m.wg.Done()
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.draw(false)
		}
	}
}

func (m *Meter) draw(final bool) {
	done := m.done.Load()
	el := time.Since(m.start)
	rate := float64(done-m.base) / el.Seconds()
	line := m.Line(done, el)
	if m.tty {
		bar := ""
		if m.total > 0 {
			const width = 24
			fill := int(float64(width) * float64(done) / float64(m.total))
			fill = min(max(fill, 0), width)
			bar = "[" + strings.Repeat("=", fill) + strings.Repeat(" ", width-fill) + "] "
		}
		end := ""
		if final {
			end = "\n"
		}
		fmt.Fprintf(m.w, "\r\033[K%s%s%s", bar, line, end)
		return
	}
	if final || done > 0 || rate >= 0 {
		fmt.Fprintln(m.w, line)
	}
}

// Line renders the state as text: label, done/total, rate, ETA, tokens and
// dollars when there are any.
func (m *Meter) Line(done int64, el time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d", m.label, done)
	if m.total > 0 {
		fmt.Fprintf(&b, "/%d %s (%.1f%%)", m.total, m.unit, 100*float64(done)/float64(m.total))
	} else {
		fmt.Fprintf(&b, " %s", m.unit)
	}
	rate := 0.0
	if el > 0 {
		rate = float64(done-m.base) / el.Seconds()
	}
	fmt.Fprintf(&b, ", %.1f/s", rate)
	if m.total > 0 && rate > 0 && done < m.total {
		eta := time.Duration(float64(m.total-done) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
	}
	if tk := m.tokens.Load(); tk > 0 {
		fmt.Fprintf(&b, ", %s tokens", human(tk))
	}
	if c := m.cents.Load(); c > 0 {
		fmt.Fprintf(&b, ", $%.2f", float64(c)/10000)
	}
	fmt.Fprintf(&b, ", %s elapsed", el.Round(time.Second))
	return b.String()
}

func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// TerminalWidth is the width in columns of the terminal w writes to; ok is
// false when w is not a terminal.
func TerminalWidth(w io.Writer) (cols int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	return cols, err == nil
}
