package llm

import "time"

// EventKind says what happened in an Event.
type EventKind string

// The kinds of Event a Client reports.
const (
	EventRetry        EventKind = "retry"         // an attempt failed and will be retried after Wait
	EventRateLimited  EventKind = "rate_limited"  // the server answered 429 (or 503/529 with Retry-After); this call waits Wait
	EventPause        EventKind = "pause"         // the whole endpoint waits Wait (x-ratelimit-remaining-* at 0)
	EventConcurrency  EventKind = "concurrency"   // the adaptive concurrency limit changed to Concurrency
	EventBreakerOpen  EventKind = "breaker_open"  // too many consecutive failures; the endpoint pauses Wait
	EventBreakerClose EventKind = "breaker_close" // a call succeeded after the breaker had opened
	EventFatal        EventKind = "fatal"         // the endpoint returned a fatal error; Err says which
	// EventUnreachable says, once per outage, that the endpoint cannot be
	// reached (Err says why); calls retry for Wait (Limits.Unreachable)
	// before they fail with an *UnreachableError.
	EventUnreachable EventKind = "unreachable"
	// EventParseFailures says, once per stage, that many of the stage's
	// first answers failed to parse (Failures of Answers; see
	// Options.ParseWarnAfter): Err is the last parser error and Example
	// the start of that raw answer.
	EventParseFailures EventKind = "parse_failures"
)

// Event is a notice from the client for progress displays and logs. Events
// never contain keys, URLs or prompt text; only EventParseFailures carries
// model text, the clipped Example of an answer that did not parse.
type Event struct {
	Time        time.Time
	Kind        EventKind
	Endpoint    string
	Role        string
	Stage       string
	Attempt     int           // attempt number that triggered the event, when relevant
	Status      int           // HTTP status, when relevant (0 for transport errors)
	Wait        time.Duration // how long the call or endpoint waits
	Concurrency int           // new concurrency limit (EventConcurrency, EventBreakerOpen)
	Err         string        // short error text
	Failures    int           // answers that failed to parse (EventParseFailures)
	Answers     int           // answers parsed or rejected so far (EventParseFailures)
	Example     string        // start of a raw answer that failed to parse (EventParseFailures)
}
