package llm

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// rpmHeadroom keeps the request rate 1% under the configured RPM, so the
// jitter between our clock and the server's arrival times cannot push one
// 60-second window over the limit.
const rpmHeadroom = 0.99

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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

// take charges n tokens and waits until the bucket is out of debt. On
// cancellation the charge is refunded.
func (b *tokenBucket) take(ctx context.Context, n int) error {
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
	if err := sleep(ctx, wait); err != nil {
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

// aimd is an adaptive concurrency limit: a semaphore whose size halves when
// the server says 429 (multiplicative decrease, floor 1) and grows by about
// one slot per limit-many successes (additive increase) back to max.
//
// A burst of 429s from requests that were all sent under the old limit
// counts as one signal: each holder remembers the epoch it started in, and
// only a 429 from the current epoch halves the limit again.
type aimd struct {
	mu       sync.Mutex
	max      int
	limit    float64
	inflight int
	epoch    int64
	waiters  []chan struct{}
}

func newAIMD(max int) *aimd { return &aimd{max: max, limit: float64(max)} }

// acquire waits for a slot. It returns the epoch the slot was granted in.
func (a *aimd) acquire(ctx context.Context) (int64, error) {
	a.mu.Lock()
	if a.inflight < int(a.limit) && len(a.waiters) == 0 {
		a.inflight++
		e := a.epoch
		a.mu.Unlock()
		return e, nil
	}
	ch := make(chan struct{})
	a.waiters = append(a.waiters, ch)
	a.mu.Unlock()
	select {
	case <-ch:
		a.mu.Lock()
		e := a.epoch
		a.mu.Unlock()
		return e, nil
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-ch: // granted while we gave up: pass the slot on
			a.inflight--
			a.wakeLocked()
		default:
			for i, w := range a.waiters {
				if w == ch {
					a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
					break
				}
			}
		}
		return 0, ctx.Err()
	}
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
		ch := a.waiters[0]
		a.waiters = a.waiters[1:]
		a.inflight++
		close(ch)
	}
}

// decrease halves the limit if epoch is current. It reports the new limit
// and whether its integer value changed.
func (a *aimd) decrease(epoch int64) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if epoch != a.epoch {
		return int(a.limit), false
	}
	old := int(a.limit)
	a.limit = math.Max(1, math.Floor(a.limit/2))
	a.epoch++
	return int(a.limit), int(a.limit) != old
}

// floor drops the limit to 1 (the circuit breaker's half-open probe).
func (a *aimd) floor() (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := int(a.limit)
	a.limit = 1
	a.epoch++
	return 1, old != 1
}

// increase adds 1/limit to the limit, capped at max.
func (a *aimd) increase() (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := int(a.limit)
	if old >= a.max {
		return old, false
	}
	a.limit = math.Min(float64(a.max), a.limit+1/a.limit)
	a.wakeLocked()
	return int(a.limit), int(a.limit) != old
}

func (a *aimd) current() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.limit)
}

// gate is the endpoint-wide pause and circuit breaker: when a server says
// "wait" (Retry-After, an exhausted x-ratelimit budget) or too many attempts
// in a row fail, every caller of the endpoint waits until the gate reopens.
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

// wait blocks until the gate is open or ctx is done. It loops because the
// pause may be extended while waiting.
func (g *gate) wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		d := time.Until(g.until)
		g.mu.Unlock()
		if d <= 0 {
			return ctx.Err()
		}
		if err := sleep(ctx, d); err != nil {
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
