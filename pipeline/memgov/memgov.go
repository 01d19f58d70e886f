// Package memgov holds a long command's Go heap near the size it needed at
// the start, without making it pay for that in speed.
//
// A command that folds over a run in pages has a working set that does not
// depend on the run's length, yet its peak RSS still grows with it: the
// collector lets the heap reach twice what was live at its last cycle, and a
// run of a million conversations collects thousands of times, so one cycle
// lands at the worst moment (a Parquet row group being encoded while the
// next page is decoded). A fixed soft limit per command only helps where it
// happens to sit just above that command's working set.
//
// The governor instead watches the command: during a warm-up it leaves the
// heap alone under a ceiling and records the largest footprint; then it sets
// the soft limit a margin (Headroom) above that footprint. The margin is
// what keeps it cheap: a limit at or under the footprint the collector
// reaches by itself makes every cycle that reaches it start early, and the
// runtime's scavenger returns free pages that the next cycle faults back in,
// which costs wall time and system time. Above the footprint the limit
// only cuts short the rare cycle that would have drifted higher; for the
// same reason a ceiling must sit above what the command reaches by itself.
// If the working set really grows later (a later step needs more), the
// collector starts to run more often; when its share of the process's CPU
// rises clearly above the warm-up's, the governor raises the limit a step,
// never above the ceiling. A soft limit never fails an allocation: at worst
// the runtime collects more often.
package memgov

import (
	"context"
	"sync"
	"time"
)

// Sample is one reading of the process.
type Sample struct {
	Elapsed   time.Duration // since the governor started
	Footprint int64         // memory the Go runtime holds from the OS (what the soft limit counts)
	GCCycles  uint64        // completed collections, cumulative
	GCCPU     float64       // CPU seconds spent collecting, cumulative
	CPU       float64       // CPU seconds of the whole process (user + system), cumulative
}

// Policy says how the governor decides.
type Policy struct {
	// Ceiling is the limit during the warm-up and the most the governor
	// ever sets. Zero means none: the warm-up runs without a limit.
	Ceiling int64
	// Floor is the least it ever sets.
	Floor int64
	// The warm-up ends when both have passed: the wall time and the number
	// of completed collections (a command that allocates little never
	// reaches the cycles and is never capped; it has nothing to hold).
	Warmup       time.Duration
	WarmupCycles uint64
	// Window is how much process CPU time a measurement of the collector's
	// share spans; a wall-clock window would mean nothing while the
	// command waits on a model endpoint.
	Window time.Duration
	// Slack is how many points of CPU share (0.10 = ten percent) above the
	// warm-up's the collector may take before the limit is raised.
	Slack float64
	// Step multiplies the limit when it is raised.
	Step float64
	// Headroom multiplies the warm-up's peak footprint to give the limit
	// held after it (at least 1).
	Headroom float64
}

// DefaultPolicy is the one the commands use under the given ceiling.
func DefaultPolicy(ceiling int64) Policy {
	return Policy{
		Ceiling:      ceiling,
		Floor:        32 << 20,
		Warmup:       15 * time.Second,
		WarmupCycles: 10,
		Window:       3 * time.Second,
		// A collector that takes five points more of the CPU than in the
		// warm-up already costs more than the 5% of speed the governor may
		// cost; the step is large enough that one raise relieves it.
		Slack:    0.05,
		Step:     1.25,
		Headroom: 1.25,
	}
}

// maxBaseline caps the warm-up's collector share that a later window is
// compared with.
const maxBaseline = 0.25

// Governor turns samples into limits and applies them. It reads no clock
// and no runtime state itself (Run does), so tests drive it with samples.
// Its methods are safe to call from several goroutines.
type Governor struct {
	mu       sync.Mutex
	p        Policy
	set      func(int64)
	applied  int64 // the limit last passed to set (0: none yet)
	started  bool
	start    Sample // the first sample
	peak     int64  // largest footprint during the warm-up
	capped   bool
	limit    int64   // the limit in force (0: none)
	baseline float64 // the collector's CPU share during the warm-up
	window   Sample  // where the current measurement window began
}

// New returns a governor that applies its limits through set (in the
// program, debug.SetMemoryLimit); the ceiling is applied at once.
func New(p Policy, set func(int64)) *Governor {
	if p.Step <= 1 {
		p.Step = 1.125
	}
	p.Headroom = max(p.Headroom, 1)
	g := &Governor{p: p, set: set, limit: p.Ceiling}
	g.apply()
	return g
}

// Limit is the limit in force (0: none).
func (g *Governor) Limit() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit
}

// SetCeiling changes the ceiling: a command that knows its working set
// better than the default replaces it as it starts. The limit follows while
// the warm-up lasts, or when it sits above the new ceiling.
func (g *Governor) SetCeiling(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.p.Ceiling = n
	if !g.capped || (n > 0 && g.limit > n) {
		g.limit = n
	}
	g.apply()
}

// Observe takes a sample and applies the limit that follows from it.
func (g *Governor) Observe(s Sample) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.observe(s)
	g.apply()
}

func (g *Governor) observe(s Sample) {
	if !g.started {
		g.started, g.start = true, s
	}
	if !g.capped {
		g.peak = max(g.peak, s.Footprint)
		if s.Elapsed-g.start.Elapsed < g.p.Warmup || s.GCCycles-g.start.GCCycles < g.p.WarmupCycles {
			return
		}
		g.capped = true
		if cpu := s.CPU - g.start.CPU; cpu > 0 {
			// A start-up that allocated heavily (tables being built) must
			// not set the bar so high that a starved collector, which the
			// runtime lets take up to half the CPU, never clears it.
			g.baseline = min((s.GCCPU-g.start.GCCPU)/cpu, maxBaseline)
		}
		g.limit = g.clamp(int64(float64(g.peak) * g.p.Headroom))
		g.window = s
		return
	}
	cpu := s.CPU - g.window.CPU
	if cpu < g.p.Window.Seconds() {
		return
	}
	share := (s.GCCPU - g.window.GCCPU) / cpu
	g.window = s
	if share > g.baseline+g.p.Slack && (g.p.Ceiling == 0 || g.limit < g.p.Ceiling) {
		g.limit = g.clamp(int64(float64(g.limit) * g.p.Step))
	}
}

func (g *Governor) clamp(n int64) int64 {
	if g.p.Ceiling > 0 && n > g.p.Ceiling {
		n = g.p.Ceiling
	}
	return max(n, g.p.Floor)
}

// apply passes a changed limit to set. A limit of 0 (no ceiling, still
// warming up) is never passed: the runtime's own default already holds.
func (g *Governor) apply() {
	if g.limit > 0 && g.limit != g.applied && g.set != nil {
		g.set(g.limit)
		g.applied = g.limit
	}
}

// Run samples the process every interval and feeds the governor until ctx
// ends.
func (g *Governor) Run(ctx context.Context, interval time.Duration) {
	r := newReader()
	t := time.NewTicker(interval)
	defer t.Stop()
	begin := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := r.read()
			s.Elapsed = now.Sub(begin)
			g.Observe(s)
		}
	}
}
