package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrFatal marks errors that no retry can fix and that would fail every
	// other unit the same way: a rejected key (401), a forbidden resource
	// (403), an unknown model or wrong base URL (404), an exhausted billing
	// quota. Callers stop the run at once when errors.Is(err, ErrFatal).
	ErrFatal = errors.New("fatal endpoint error")

	// ErrBudgetExceeded is returned by Budget.Reserve, and by Client.Call when
	// the client has a budget, when spend plus in-flight estimates would pass
	// the cap. No request was sent. Callers stop taking new work and leave the
	// run resumable.
	ErrBudgetExceeded = errors.New("budget exceeded")

	// ErrUnknownRole is returned when a request names a role that has no
	// binding and there is no default to fall back on.
	ErrUnknownRole = errors.New("unknown role")

	// ErrStopped is returned by Client.Call when Options.Stop was closed
	// while the call waited to be sent or retried (for a concurrency slot,
	// a rate-limit token, a pause, a Retry-After). Nothing was charged for
	// it; callers leave the unit pending, as for a budget stop.
	ErrStopped = errors.New("stopped while waiting to send")
)

// CallError is an HTTP error answer from an endpoint: a 400 or 422 that
// fails only this unit (not retried), the last of several retryable answers
// (5xx, 408, 409) once MaxAttempts ran out, or the last 429 (or 503 with
// Retry-After) once the endpoint's rate-limit patience ran out. Message is the server's own
// explanation; Raw is the response body (at most 4 KiB), kept so the ledger
// can store it with the failed unit.
type CallError struct {
	Endpoint  string
	Status    int
	Message   string
	Raw       string
	Retryable bool // the status was worth retrying (attempts ran out)
}

func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "endpoint %s: %d %s", e.Endpoint, e.Status, strings.ToLower(http.StatusText(e.Status)))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// FatalError is the typed form of an ErrFatal error: one line naming the
// endpoint, the status and what to check. It never holds the key or the URL.
type FatalError struct {
	Endpoint string
	Status   int
	Message  string // server's explanation, if any
	Hint     string // what the user should check
}

func (e *FatalError) Error() string {
	s := fmt.Sprintf("endpoint %s: %d %s", e.Endpoint, e.Status, strings.ToLower(http.StatusText(e.Status)))
	if e.Hint != "" {
		s += ": " + e.Hint
	}
	if e.Message != "" {
		s += " (server said: " + e.Message + ")"
	}
	return s
}

// Unwrap makes errors.Is(err, ErrFatal) true.
func (e *FatalError) Unwrap() error { return ErrFatal }

// ParseError is returned by CallParsed when every answer it got was
// malformed. Raw is the text of the last answer (reasoning included, as the
// model wrote it), so the caller can record the failed unit with it.
type ParseError struct {
	Attempts int
	Raw      string
	Err      error // the parser's error for the last answer
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("parsing model answer (%d tries): %v", e.Attempts, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// IsFatal reports whether err should stop the run.
func IsFatal(err error) bool { return errors.Is(err, ErrFatal) }

// truncate keeps s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…[truncated]"
}

// UnitFailure reports whether err concerns only the unit that made the call
// — an answer that stayed malformed after its retries, or a request the
// endpoint rejected (400, 422) — rather than the run (a bad key, an unknown
// model, a spent budget, a cancelled context). For such errors it returns
// the raw answer or error body to keep with the failed unit.
func UnitFailure(err error) (raw string, ok bool) {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Raw, true
	}
	var ce *CallError
	if errors.As(err, &ce) && !IsFatal(err) {
		return ce.Raw, true
	}
	return "", false
}
