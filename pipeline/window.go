package pipeline

import (
	"github.com/ac3/ac3/pipeline/llm"
)

// Bounds of DefaultWindow.
const (
	// MinWindow keeps a model-backed stage from running one unit at a time
	// even when its endpoint allows only one request in flight: the next
	// unit's prompt is built while the current one waits.
	MinWindow = 2
	// MaxWindow caps the derived window. Each open task holds a
	// conversation and its results; past a few hundred requests in flight
	// an endpoint's own limits, not the window, decide the pace.
	MaxWindow = 512
	// windowPerSlot is how many units the window holds per request the
	// endpoint lets in flight. One would leave a slot idle while the unit
	// that takes it next is still being prepared (prompt rendering, the
	// cache lookup, the commit of the task before it); two keep a request
	// waiting at the client's limiter for every slot that frees.
	windowPerSlot = 2
)

// DefaultWindow is the model window (Options.Window) for a stage that calls
// the given roles through c: for each distinct endpoint behind the roles,
// twice the requests it lets in flight (its concurrency limit, with the llm
// client's default when the config sets none), summed over the endpoints and
// kept within [MinWindow, MaxWindow]. RPM and TPM limits need no room of
// their own: at the latency where they bind, fewer requests are in flight
// than the concurrency limit allows. It returns 0 when c is nil or no role
// resolves: the stage then makes no model call.
//
// Model stages call it for their ModelWindow.
func DefaultWindow(c *llm.Client, roles ...string) int {
	if c == nil {
		return 0
	}
	seen := map[string]bool{}
	n := 0
	for _, r := range roles {
		ep, err := c.Endpoint(r)
		if err != nil || seen[ep.Name] {
			continue
		}
		seen[ep.Name] = true
		n += windowPerSlot * max(1, ep.Limits.Concurrency)
	}
	if len(seen) == 0 {
		return 0
	}
	return min(MaxWindow, max(MinWindow, n))
}
