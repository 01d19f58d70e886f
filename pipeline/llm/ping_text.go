package llm

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// WriteText prints res as 'ac3 llm ping' shows it for role: endpoint, model,
// latency, usage, the answer's start and the rate-limit headers.
func (res PingResult) WriteText(w io.Writer, role string) {
	fmt.Fprintf(w, "role %s → %s\n", role, res.Endpoint)
	fmt.Fprintf(w, "model:    %s\n", res.Model)
	fmt.Fprintf(w, "latency:  %s (%d attempt(s))\n", res.Latency.Round(time.Millisecond), res.Attempts)
	fmt.Fprintf(w, "usage:    %d prompt + %d completion tokens", res.Usage.Prompt, res.Usage.Completion)
	if res.Usage.CachedPrompt > 0 || res.Usage.Reasoning > 0 {
		fmt.Fprintf(w, " (%d cached, %d reasoning)", res.Usage.CachedPrompt, res.Usage.Reasoning)
	}
	fmt.Fprintf(w, ", $%.6f\n", res.CostUSD)
	text := res.Text
	if len(text) > 120 {
		text = text[:120] + "…"
	}
	fmt.Fprintf(w, "answer:   %q\n", text)
	keys := make([]string, 0, len(res.Headers))
	for k := range res.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		fmt.Fprintln(w, "rate-limit headers: none returned")
		return
	}
	fmt.Fprintln(w, "rate-limit headers:")
	for _, k := range keys {
		fmt.Fprintf(w, "  %s: %s\n", strings.ToLower(k), strings.Join(http.Header(res.Headers).Values(k), ", "))
	}
}
