package llmtest

import "hash/fnv"

// Prefix caching, as the servers ac3 talks to do it: OpenAI and Azure bill
// the longest prefix a request shares with a recent one, counted from 1,024
// tokens in steps of 128, at the cached price and report it in
// usage.prompt_tokens_details.cached_tokens; vLLM's automatic prefix caching
// and llama.cpp reuse blocks of earlier prompts the same way.
//
// The server has no tokenizer, so it counts as it does for the usage it
// reports by default: one token per 4 bytes of the messages. A request's
// messages are laid end to end (a role marker, the content, an end marker each), and the
// prefix hash is taken at every block boundary (4,096 bytes, then every 512).
// A request is served from the cache up to the last boundary whose hash a
// recent request of the same model also reached. Arrival order alone decides
// it, never time, so a test sees the same figures on every run for the same
// order of requests.
const (
	// CacheMinTokens is the shortest prefix a cache serves.
	CacheMinTokens = 1024
	// CacheBlockTokens is the step in which a longer prefix is served.
	CacheBlockTokens = 128
	// bytesPerToken is the server's token approximation.
	bytesPerToken = 4
	// defaultCacheWindow is how many recent requests the cache remembers.
	defaultCacheWindow = 2048
)

// prefixCache remembers the block hashes of the last window requests. It is
// not safe for concurrent use; the Server holds its lock.
type prefixCache struct {
	window int
	recent [][]uint64 // block hashes of each remembered request, oldest first
	count  map[uint64]int
}

func newPrefixCache(window int) *prefixCache {
	if window <= 0 {
		window = defaultCacheWindow
	}
	return &prefixCache{window: window, count: map[uint64]int{}}
}

// blockHashes returns the hash of the prefix ending at each block boundary
// of req's messages, shortest first.
func blockHashes(req ChatRequest) []uint64 {
	h := fnv.New64a()
	var out []uint64
	next := CacheMinTokens * bytesPerToken
	n := 0
	write := func(s string) {
		for len(s) > 0 {
			k := min(len(s), next-n)
			_, _ = h.Write([]byte(s[:k]))
			n, s = n+k, s[k:]
			if n == next {
				out = append(out, h.Sum64())
				next += CacheBlockTokens * bytesPerToken
			}
		}
	}
	write(req.Model + "\x00")
	for _, m := range req.Messages {
		// As a chat template does: a role marker, the content, an end
		// marker, so a message's end is part of the prefix.
		write("\x00" + m.Role + "\x00")
		write(m.Content)
		write("\x00")
	}
	return out
}

// lookup reports how many tokens of req a recent request's prefix covers,
// then remembers req (when remember is set).
func (c *prefixCache) lookup(req ChatRequest, remember bool) int {
	hs := blockHashes(req)
	hit := 0
	for hit < len(hs) && c.count[hs[hit]] > 0 {
		hit++
	}
	if remember && len(hs) > 0 {
		c.recent = append(c.recent, hs)
		for _, x := range hs {
			c.count[x]++
		}
		if len(c.recent) > c.window {
			for _, x := range c.recent[0] {
				if c.count[x]--; c.count[x] <= 0 {
					delete(c.count, x)
				}
			}
			c.recent = c.recent[1:]
		}
	}
	if hit == 0 {
		return 0
	}
	return CacheMinTokens + (hit-1)*CacheBlockTokens
}
