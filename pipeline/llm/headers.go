package llm

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxServerWait caps any wait a server asks for, so a bogus header cannot
// park a run for a day.
const maxServerWait = 10 * time.Minute

// retryAfter reads how long the server asks us to wait before retrying:
// retry-after-ms (milliseconds, used by OpenAI and Azure) first, then
// Retry-After as seconds or an HTTP date. It reports false when neither is
// present or readable.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return clampWait(time.Duration(ms * float64(time.Millisecond))), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return clampWait(time.Duration(s * float64(time.Second))), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return clampWait(t.Sub(now)), true
		}
	}
	return 0, false
}

// rateLimitPause reads the x-ratelimit-remaining-{requests,tokens} and
// x-ratelimit-reset-{requests,tokens} headers. When a remaining count is 0 it
// returns how long until that budget resets (the longer of the two).
func rateLimitPause(h http.Header, now time.Time) (time.Duration, bool) {
	var wait time.Duration
	found := false
	for _, kind := range []string{"requests", "tokens"} {
		rem := strings.TrimSpace(h.Get("X-Ratelimit-Remaining-" + kind))
		if rem == "" {
			continue
		}
		n, err := strconv.ParseFloat(rem, 64)
		if err != nil || n > 0 {
			continue
		}
		d, ok := parseReset(h.Get("X-Ratelimit-Reset-"+kind), now)
		if !ok {
			d = time.Second // exhausted but no reset given: a short, safe pause
		}
		found = true
		wait = max(wait, d)
	}
	return clampWait(wait), found
}

// parseReset reads a reset value in any form servers use: an OpenAI duration
// ("6m0s", "20ms", "1.5s"), plain seconds ("2", "0.5"), or an absolute Unix
// time in seconds or milliseconds (OpenRouter).
func parseReset(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d, true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	switch {
	case f > 1e12: // Unix milliseconds
		return time.UnixMilli(int64(f)).Sub(now), true
	case f > 1e9: // Unix seconds
		return time.Unix(int64(f), 0).Sub(now), true
	}
	return time.Duration(f * float64(time.Second)), true
}

func clampWait(d time.Duration) time.Duration {
	return min(max(d, 0), maxServerWait)
}

// rateLimitHeaders keeps the response headers worth showing from ping:
// rate limits, retry hints, and the server's processing time and request id.
func rateLimitHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		l := strings.ToLower(k)
		if strings.Contains(l, "ratelimit") || strings.HasPrefix(l, "retry-after") ||
			l == "openai-processing-ms" || l == "openai-model" || l == "x-request-id" {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}
