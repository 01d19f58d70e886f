package llm

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// rpmHeadroom keeps the request rate 1% under the configured RPM, so the
// jitter between our clock and the server's arrival times cannot push one
// 60-second window over the limit.
const rpmHeadroom = 0.99

// waiter is what every wait inside a call listens to: the caller's
// context, and the run-wide signals that make waiting calls give up while
// requests already on the wire finish and are cached (Options.Stop closed,
// the budget reached). A nil channel never fires.
type waiter struct {
	ctx    context.Context
	stop   <-chan struct{}
	budget <-chan struct{}
}

// errBudgetReached is what a waiting call returns once the budget has
// refused another call: the run is stopping, so it gives up its wait.
var errBudgetReached = fmt.Errorf("giving up a wait: the run's budget was reached: %w", ErrBudgetExceeded)

// sleep waits d or until the waiter is told to stop. A call that need not
// wait goes on even after a stop or the budget was reached: only waiting is
// given up, so calls that fit finish as they would have.
func (w waiter) sleep(d time.Duration) error {
	if d <= 0 {
		return w.ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	return waitFor(w, t.C)
}

// wait blocks until ch is closed or the waiter is told to stop.
func (w waiter) wait(ch <-chan struct{}) error {
	return waitFor(w, ch)
}

// waitFor is sleep's and wait's select: it returns nil once ch yields, or
// why the waiter gave up first. Generic because a timer's channel carries
// a time, not struct{}.
func waitFor[T any](w waiter, ch <-chan T) error {
	select {
	case <-ch:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	case <-w.stop:
		return ErrStopped
	case <-w.budget:
		return errBudgetReached
	}
}

// rpmWait waits for a request token of l (nil: no limit).
func (w waiter) rpmWait(l *rate.Limiter) error {
	if l == nil {
		return nil
	}
	r := l.Reserve()
	if err := w.sleep(r.Delay()); err != nil {
		r.Cancel()
		return err
	}
	return nil
}

// newRPMLimiter returns a limiter that spaces requests evenly at rpm per
// minute. The burst is 1: any 60-second window then holds at most rpm
// requests, which a larger burst would not guarantee.
func newRPMLimiter(rpm int) *rate.Limiter {
	if rpm <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(float64(rpm)/60*rpmHeadroom), 1)
}

// tokenBucket limits tokens per minute. It is a token bucket in the
// reservation style of rate.Limiter, with one thing rate.Limiter lacks: the
// charge made with an estimate before a call can be corrected, up or down,
// once the server reports the real usage. Tokens may go negative (a debt);
// later callers wait until it is paid back, which keeps them in FIFO order.
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

func newTokenBucket(tpm int) *tokenBucket {
	if tpm <= 0 {
		return nil
	}
	// A sixth of a minute's budget may go out at once; more would let the
	// first minute of a run carry up to twice the limit.
	burst := math.Max(float64(tpm)/6, 1)
	return &tokenBucket{rate: float64(tpm) / 60, burst: burst, tokens: burst, last: time.Now()}
}

func (b *tokenBucket) refill(now time.Time) {
	b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
}

// take charges n tokens and waits until the bucket is out of debt. When the
// wait is given up the charge is refunded.
func (b *tokenBucket) take(w waiter, n int) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	b.refill(time.Now())
	b.tokens -= float64(n)
	wait := time.Duration(0)
	if b.tokens < 0 {
		wait = time.Duration(-b.tokens / b.rate * float64(time.Second))
	}
	b.mu.Unlock()
	if err := w.sleep(wait); err != nil {
		b.adjust(-n)
		return err
	}
	return nil
}

// adjust charges delta more tokens (a refund when negative) without waiting.
func (b *tokenBucket) adjust(delta int) {
	if b == nil || delta == 0 {
		return
	}
	b.mu.Lock()
	b.refill(time.Now())
	b.tokens = math.Min(b.burst, b.tokens-float64(delta))
	b.mu.Unlock()
}

// The adaptive concurrency limit's constants.
const (
	// cutFactor is the multiplicative decrease.
	cutFactor = 0.5
	// levelDecay ages a level's counts per answer, so about the last 64
	// answers at a level decide its share of overload signals.
	levelDecay = 1 - 1.0/64
	// knownSamples answers at a level make its share worth comparing.
	knownSamples = 8
	// probeSamples answers are collected at the lower level before a probe
	// is judged: enough that a share of 30% is known to about ±8 points.
	probeSamples = 32
	// staleAfter forgets a level's counts that have not been updated for
	// this long: the server's load, and so its answers, may have changed.
	staleAfter = 5 * time.Minute
)

// levelStats counts the answers to requests sent while the limit stood at
// one level: all of them (n) and the overload signals among them (bad),
// both decayed per answer.
type levelStats struct {
	n, bad float64
	at     time.Time
}

func (s *levelStats) observe(congested bool, now time.Time) {
	if now.Sub(s.at) > staleAfter {
		*s = levelStats{}
	}
	s.n = s.n*levelDecay + 1
	s.bad *= levelDecay
	if congested {
		s.bad++
	}
	s.at = now
}

// fresh returns s, or nothing if it is stale.
func (s levelStats) fresh(now time.Time) levelStats {
	if now.Sub(s.at) > staleAfter {
		return levelStats{}
	}
	return s
}

func (s levelStats) share() float64 {
	if s.n == 0 {
		return 0
	}
	return s.bad / s.n
}

// clearlyAbove reports whether hi's share of overload signals exceeds lo's
// by more than sampling noise explains: by three standard errors of the
// difference of two proportions (the comparison is repeated once per
// round trip, so a looser bar would sooner or later cut on noise alone),
// and by at least five points.
func clearlyAbove(hi, lo levelStats) bool {
	if hi.n == 0 || lo.n == 0 {
		return false
	}
	p := (hi.bad + lo.bad) / (hi.n + lo.n)
	se := math.Sqrt(p * (1 - p) * (1/hi.n + 1/lo.n))
	return hi.share()-lo.share() > math.Max(0.05, 3*se)
}

// slot is a granted place in the semaphore: the epoch and the level the
// limit stood at when it was granted.
type slot struct {
	epoch int64
	level int
}

// probe is a cut made to learn whether overload eases at a lower level.
type probe struct {
	from      float64 // the limit before the cut, restored if nothing eased
	fromLevel int
	level     int // the level cut to
	samples   int // answers seen at level since the cut
}

type grant struct {
	ch chan struct{}
	s  slot
}

// aimd is the adaptive concurrency limit of one endpoint: a semaphore whose
// size is cut when the server signals overload (429, 503, 529) and grows
// back by about one slot per limit-many successes (additive increase), up
// to the configured maximum.
//
// Overload signals that do not depend on our load (a provider's noisy
// throttling, a key shared with other jobs) must not drive the limit to the
// floor and keep it there, so a signal cuts only when the load it came from
// explains it:
//
//   - At most once per round trip: only a signal from a request granted its
//     slot after the last change (the current epoch) counts, so a burst of
//     429s from requests sent under the old limit is one signal.
//   - Only when overload rises with concurrency: the limiter counts, for each
//     level the limit has stood at, the share of answers that were overload
//     signals. A cut from L to L/2 is made when L/2 was measured recently and
//     L's share is clearly above it; when L/2 has not been measured, the cut
//     is a probe: the limit holds at L/2 for probeSamples answers and goes
//     back to L if the share did not clearly drop. Random 429s thus cost one
//     short probe every few minutes, while real overload is cut as before.
//   - Never below a floor (Limits.MinConcurrency, default a quarter of the
//     maximum), except for the circuit breaker's single probe request.
//
// Requests that were rate limited wait what their own answer asked
// (Retry-After), not the whole endpoint.
type aimd struct {
	mu       sync.Mutex
	max, min float64
	limit    float64
	inflight int
	epoch    int64
	waiters  []*grant
	levels   []levelStats // indexed by level, 1..max
	probe    *probe
	answers  int // answers observed, for spacing comparisons
	compared int // answers when the levels were last compared
}

// defaultMinConcurrency is the floor of the limit: a quarter of the
// maximum, at least 1.
func defaultMinConcurrency(maxConc int) int { return max(maxConc/4, 1) }

func newAIMD(maxConc, minConc int) *aimd {
	if minConc <= 0 {
		minConc = defaultMinConcurrency(maxConc)
	}
	minConc = max(1, min(minConc, maxConc))
	return &aimd{max: float64(maxConc), min: float64(minConc), limit: float64(maxConc), levels: make([]levelStats, maxConc+1)}
}

// slotLocked is the slot a request granted now gets.
func (a *aimd) slotLocked() slot { return slot{epoch: a.epoch, level: int(a.limit)} }

// acquire waits for a slot.
func (a *aimd) acquire(w waiter) (slot, error) {
	a.mu.Lock()
	if a.inflight < int(a.limit) && len(a.waiters) == 0 {
		a.inflight++
		s := a.slotLocked()
		a.mu.Unlock()
		return s, nil
	}
	g := &grant{ch: make(chan struct{})}
	a.waiters = append(a.waiters, g)
	a.mu.Unlock()
	if err := w.wait(g.ch); err != nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-g.ch: // granted while we gave up: pass the slot on
			a.inflight--
			a.wakeLocked()
		default:
			for i, x := range a.waiters {
				if x == g {
					a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
					break
				}
			}
		}
		return slot{}, err
	}
	return g.s, nil
}

func (a *aimd) release() {
	a.mu.Lock()
	a.inflight--
	a.wakeLocked()
	a.mu.Unlock()
}

// wakeLocked hands free slots to waiters in arrival order.
func (a *aimd) wakeLocked() {
	for len(a.waiters) > 0 && a.inflight < int(a.limit) {
		g := a.waiters[0]
		a.waiters = a.waiters[1:]
		a.inflight++
		g.s = a.slotLocked()
		close(g.ch)
	}
}

// setLocked moves the limit and starts a new epoch. It reports the new
// limit and whether its integer value changed.
func (a *aimd) setLocked(limit float64) (int, bool) {
	old := int(a.limit)
	a.limit = limit
	a.epoch++
	a.wakeLocked()
	return int(a.limit), int(a.limit) != old
}

// observeLocked counts an answer to a request sent at level s.level, and
// judges a running probe once it has seen enough answers.
func (a *aimd) observeLocked(s slot, congested bool, now time.Time) (int, bool) {
	if s.level < 1 || s.level >= len(a.levels) {
		return int(a.limit), false
	}
	a.levels[s.level].observe(congested, now)
	a.answers++
	pr := a.probe
	if pr == nil || s.level != pr.level {
		return int(a.limit), false
	}
	if pr.samples++; pr.samples < probeSamples {
		return int(a.limit), false
	}
	a.probe = nil
	if clearlyAbove(a.levels[pr.fromLevel].fresh(now), a.levels[pr.level].fresh(now)) {
		return int(a.limit), false // overload eased at the lower level: keep it
	}
	return a.setLocked(pr.from) // it did not: the signals were not ours
}

// succeeded counts a successful answer and grows the limit by 1/limit,
// unless a probe holds it. It reports the new limit and whether its integer
// value changed.
func (a *aimd) succeeded(s slot, now time.Time) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, changed := a.observeLocked(s, false, now); changed || a.probe != nil {
		return n, changed
	}
	old := int(a.limit)
	if a.limit >= a.max {
		return old, false
	}
	a.limit = math.Min(a.max, a.limit+1/a.limit)
	a.wakeLocked()
	return int(a.limit), int(a.limit) != old
}

// congested counts an overload signal and cuts the limit if the rules in
// the type's comment say so. It reports the new limit and whether its
// integer value changed.
func (a *aimd) congested(s slot, now time.Time) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, changed := a.observeLocked(s, true, now); changed || a.probe != nil {
		return n, changed
	}
	if s.epoch != a.epoch {
		return int(a.limit), false
	}
	cur := int(a.limit)
	target := math.Max(a.min, math.Floor(a.limit*cutFactor))
	if int(target) >= cur {
		return cur, false
	}
	lo := a.levels[int(target)].fresh(now)
	if lo.n < knownSamples {
		a.probe = &probe{from: a.limit, fromLevel: cur, level: int(target)}
		return a.setLocked(target)
	}
	// Compare at most once per round trip (about cur answers).
	if a.answers-a.compared < cur {
		return cur, false
	}
	a.compared = a.answers
	if !clearlyAbove(a.levels[cur].fresh(now), lo) {
		return cur, false // the lower level sees as many: not our load
	}
	return a.setLocked(target)
}

// floor drops the limit to 1 (the circuit breaker's half-open probe).
func (a *aimd) floor() (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.probe = nil
	return a.setLocked(1)
}

func (a *aimd) current() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.limit)
}

// gate is the endpoint-wide pause and circuit breaker: when a server says
// the key's budget is spent (x-ratelimit-remaining-* at 0, until the reset
// it names) or too many attempts in a row fail (5xx, timeouts, resets; not
// rate limits), every caller of the endpoint waits until the gate reopens.
// A Retry-After on one answer delays only that request.
type gate struct {
	mu          sync.Mutex
	until       time.Time // no request is sent before this
	fails       int       // consecutive failed attempts
	threshold   int
	cooldown    time.Duration
	breakerTill time.Time
	open        bool // breaker opened and no success since
	fatal       error
}

// wait blocks until the gate is open or the waiter stops. It loops because
// the pause may be extended while waiting.
func (g *gate) wait(w waiter) error {
	for {
		g.mu.Lock()
		d := time.Until(g.until)
		g.mu.Unlock()
		if d <= 0 {
			return w.ctx.Err()
		}
		if err := w.sleep(d); err != nil {
			return err
		}
	}
}

// pause closes the gate for d from now, unless it is already closed longer.
// It reports whether the pause was extended.
func (g *gate) pause(d time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := time.Now().Add(d)
	if t.After(g.until) {
		g.until = t
		return true
	}
	return false
}

// failure counts a failed attempt. It reports true when this failure opens
// (or, after a cool-down with no success, reopens) the breaker.
func (g *gate) failure() (opened bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fails++
	now := time.Now()
	if g.fails >= g.threshold && !now.Before(g.breakerTill) {
		g.open = true
		g.breakerTill = now.Add(g.cooldown)
		if g.breakerTill.After(g.until) {
			g.until = g.breakerTill
		}
		return true
	}
	return false
}

// success resets the failure count. It reports true when this closes an
// open breaker.
func (g *gate) success() (closed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fails = 0
	if g.open {
		g.open = false
		return true
	}
	return false
}

func (g *gate) setFatal(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fatal == nil {
		g.fatal = err
	}
}

func (g *gate) fatalErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fatal
}
