package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
)

// CachedResponse is what a Cache stores for one successful call: enough to
// answer the same request again without sending it.
type CachedResponse struct {
	Content      string    `json:"content"`   // the message content exactly as returned
	Text         string    `json:"text"`      // Content with reasoning removed
	Reasoning    string    `json:"reasoning"` // reasoning trace, from a field or <think>
	Model        string    `json:"model"`     // model the server says answered
	FinishReason string    `json:"finish_reason,omitempty"`
	Usage        Usage     `json:"usage"`
	CostUSD      float64   `json:"cost_usd"` // what the original call cost
	CreatedAt    time.Time `json:"created_at"`
}

// Cache stores answers by request key so no request is paid for twice.
//
// Keys come from Client.Key: 64 lowercase hex characters. Implementations
// must be safe for concurrent use. Get reports false with a nil error for a
// miss; an error means the store itself failed, and the call fails with it
// (a run whose cache is broken should stop, not pay again). Put is called
// once per successful paid call, right after the response arrives and
// before Call returns, so an implementation that commits Put durably (the
// run's SQLite ledger) guarantees that a completed call is never sent again
// after a crash. Put with an existing key may overwrite or keep the old
// value; both are correct.
type Cache interface {
	Get(ctx context.Context, key string) (CachedResponse, bool, error)
	Put(ctx context.Context, key string, r CachedResponse) error
}

// MemCache is an in-memory Cache for tests and one-off runs.
type MemCache struct {
	mu sync.Mutex
	m  map[string]CachedResponse
}

// NewMemCache returns an empty MemCache.
func NewMemCache() *MemCache { return &MemCache{m: map[string]CachedResponse{}} }

// Get implements Cache.
func (c *MemCache) Get(_ context.Context, key string) (CachedResponse, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[key]
	return r, ok, nil
}

// Put implements Cache.
func (c *MemCache) Put(_ context.Context, key string, r CachedResponse) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = r
	return nil
}

// Keys returns the stored keys (for tests).
func (c *MemCache) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.m))
	for k := range c.m {
		out = append(out, k)
	}
	return out
}

// Len reports how many answers are stored.
func (c *MemCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// keyVersion changes when the canonical form below changes, so old cache
// entries are never read under a new meaning.
const keyVersion = 1

// canonicalRequest is everything that decides what the model is asked, and
// nothing else. It holds:
//
//   - the model name the endpoint serves (not the endpoint's name, base URL
//     or key: two endpoints serving the same model share answers, and moving
//     a run to another host or key keeps its cache);
//   - the messages, role and content, in order;
//   - the effective parameters after endpoint defaults, role and request
//     overrides are merged (temperature, top_p, max tokens, seed, stop,
//     reasoning effort, extra fields), and the JSON field max tokens is sent
//     under;
//   - the JSON mode actually requested and the schema, if any;
//   - the sample index and the reroll count, so N samples of one prompt, or a
//     fresh draw after a malformed answer, are N distinct entries;
//   - for an embeddings request, its texts in order (and no messages).
//
// encoding/json writes struct fields in order and map keys sorted, so the
// encoding is canonical.
type canonicalRequest struct {
	V        int            `json:"v"`
	Model    string         `json:"model"`
	Messages []conv.Message `json:"messages"`
	Params   Params         `json:"params"`
	MaxField string         `json:"max_field"`
	JSON     string         `json:"json,omitempty"`
	Schema   *Schema        `json:"schema,omitempty"`
	Sample   int            `json:"sample"`
	Reroll   int            `json:"reroll"`
	// Embed holds the texts of an embeddings request, in order; absent
	// for chat requests, whose keys it therefore leaves as they were.
	Embed []string `json:"embed,omitempty"`
}

func (r canonicalRequest) key() (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
