package llm

import (
	"fmt"
	"sync"
)

// Usage counts the tokens of one call as the server reported them.
// CachedPrompt is the part of Prompt served from the provider's prompt cache;
// Reasoning is the part of Completion spent on hidden reasoning (OpenAI
// counts reasoning inside completion tokens, and so do we).
type Usage struct {
	Prompt       int `json:"prompt"`
	Completion   int `json:"completion"`
	CachedPrompt int `json:"cached_prompt,omitempty"`
	Reasoning    int `json:"reasoning,omitempty"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.Prompt + u.Completion }

// Add returns the field-wise sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Prompt:       u.Prompt + v.Prompt,
		Completion:   u.Completion + v.Completion,
		CachedPrompt: u.CachedPrompt + v.CachedPrompt,
		Reasoning:    u.Reasoning + v.Reasoning,
	}
}

// Cost returns the price of u in US dollars: uncached prompt tokens at Input,
// cached prompt tokens at CachedInput (Input when CachedInput is 0),
// completion tokens (reasoning included) at Output.
func (p Price) Cost(u Usage) float64 {
	cached := min(max(u.CachedPrompt, 0), u.Prompt)
	ci := p.CachedInput
	if ci == 0 {
		ci = p.Input
	}
	return (float64(u.Prompt-cached)*p.Input + float64(cached)*ci + float64(u.Completion)*p.Output) / 1e6
}

// The shortest prefix the OpenAI-style prompt caches serve, and the step in
// which they serve longer ones.
const (
	CacheMinTokens   = 1024
	CacheBlockTokens = 128
)

// CacheableTokens is how much of a prefix of shared tokens, shared with a
// recent request, a prompt cache that works like OpenAI's (and Azure's)
// serves: none below CacheMinTokens, else whole blocks of CacheBlockTokens
// from there. Dry runs estimate cached tokens with it.
func CacheableTokens(shared int) int {
	if shared < CacheMinTokens {
		return 0
	}
	return CacheMinTokens + (shared-CacheMinTokens)/CacheBlockTokens*CacheBlockTokens
}

// EstimateCost is the dry-run estimate for a call of promptTokens in and
// completionTokens out at price p, assuming nothing is served from the
// provider's prompt cache (an upper bound).
func EstimateCost(p Price, promptTokens, completionTokens int) float64 {
	return p.Cost(Usage{Prompt: promptTokens, Completion: completionTokens})
}

// Budget caps what a run may spend, in US dollars. Callers reserve an
// estimate before sending a request and settle it with the actual cost after.
// It is safe for concurrent use.
//
// The first refused reservation marks the budget reached (see Reached):
// calls of a Client using it that are waiting on rate limits or retries then
// give up, since the run is stopping, while calls already sent finish.
type Budget struct {
	mu       sync.Mutex
	cap      float64
	spent    float64
	inFlight float64
	reached  chan struct{} // closed at the first refusal
}

// NewBudget returns a budget of capUSD of which spentUSD is already spent (a
// resumed run passes what its ledger records). capUSD <= 0 means no cap; the
// budget then only counts.
func NewBudget(capUSD, spentUSD float64) *Budget {
	return &Budget{cap: capUSD, spent: spentUSD, reached: make(chan struct{})}
}

// Reached returns a channel closed once a reservation has been refused.
func (b *Budget) Reached() <-chan struct{} { return b.reached }

// Reserve sets aside estimateUSD for a call about to be sent. It returns
// ErrBudgetExceeded, and reserves nothing, when spent plus in-flight
// estimates plus this one would pass the cap. Otherwise the caller must call
// release exactly once with the call's actual cost (0 if nothing was
// charged); further calls to release do nothing.
func (b *Budget) Reserve(estimateUSD float64) (release func(actualUSD float64), err error) {
	estimateUSD = max(estimateUSD, 0)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cap > 0 && b.spent+b.inFlight+estimateUSD > b.cap {
		select {
		case <-b.reached:
		default:
			close(b.reached)
		}
		return nil, fmt.Errorf("reserving $%.4f with $%.4f spent and $%.4f in flight of $%.2f: %w",
			estimateUSD, b.spent, b.inFlight, b.cap, ErrBudgetExceeded)
	}
	b.inFlight += estimateUSD
	var once sync.Once
	return func(actual float64) {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.inFlight -= estimateUSD
			b.spent += max(actual, 0)
		})
	}, nil
}

// Spent reports dollars spent so far, including the seed passed to NewBudget.
func (b *Budget) Spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// InFlight reports dollars reserved by calls not yet settled.
func (b *Budget) InFlight() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight
}

// Cap reports the cap (0 when there is none).
func (b *Budget) Cap() float64 { return b.cap }
