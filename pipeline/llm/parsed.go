package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// CallParsed calls c with req and parses the answer with fn. When fn rejects
// an answer, it asks again up to retries more times, each time with the next
// Request.Reroll, so the new request is a fresh draw and not the cached bad
// answer. Each try is an ordinary Call: cached, limited and recorded.
//
// It returns the parsed value and the response it came from. If every answer
// is rejected it returns a *ParseError holding the last raw answer, for the
// caller to record as a failed unit. Errors from Call are returned as they
// are, without further tries.
func CallParsed[T any](ctx context.Context, c *Client, req Request, retries int, fn func(Response) (T, error)) (T, Response, error) {
	var zero T
	base := req.Reroll
	var (
		resp Response
		perr error
	)
	for i := 0; i <= retries; i++ {
		req.Reroll = base + i
		var err error
		resp, err = c.Call(ctx, req)
		if err != nil {
			return zero, resp, err
		}
		v, err := fn(resp)
		c.tallyParse(req, resp, err)
		if err == nil {
			return v, resp, nil
		}
		perr = err
	}
	return zero, resp, &ParseError{Attempts: retries + 1, Raw: resp.Content, Err: perr}
}

// parseTally counts how a stage's first answers parsed.
type parseTally struct {
	answers, failures int
	warned            bool
}

// exampleBytes is how much of a raw answer an EventParseFailures shows.
const exampleBytes = 300

// tallyParse counts one parsed or rejected answer of req's stage and, the
// first time Options.ParseWarnAfter of the stage's first
// Options.ParseWarnWithin answers were rejected, sends EventParseFailures
// with perr and the start of the answer, so a run whose model cannot follow
// a stage's answer format says so after a few units instead of failing
// every unit quietly.
func (c *Client) tallyParse(req Request, resp Response, perr error) {
	stage := cmpOr(req.Stage, req.Role)
	c.mu.Lock()
	t := c.parsed[stage]
	if t == nil {
		t = &parseTally{}
		c.parsed[stage] = t
	}
	if t.answers >= c.opts.ParseWarnWithin || t.warned {
		c.mu.Unlock()
		return
	}
	t.answers++
	if perr != nil {
		t.failures++
	}
	warn := perr != nil && t.failures >= c.opts.ParseWarnAfter
	if warn {
		t.warned = true
	}
	failures, answers := t.failures, t.answers
	c.mu.Unlock()
	if !warn {
		return
	}
	ep := ""
	if e, _, err := c.resolve(req.Role); err == nil {
		ep = e.cfg.Name
	}
	c.emit(Event{Kind: EventParseFailures, Endpoint: ep, Role: req.Role, Stage: stage,
		Failures: failures, Answers: answers, Err: perr.Error(), Example: clipExample(resp.Content, exampleBytes)})
}

// clipExample keeps the first n bytes of s, cut on a rune boundary, and
// says how much it left out.
func clipExample(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" […%d more bytes]", len(s)-cut)
}

// TagParser returns a parser for CallParsed that reads the sections named in
// required (and optional) from the answer with t. See parse.Tagger.
func TagParser(t parse.Tagger, required []string, optional ...string) func(Response) (map[string]string, error) {
	return func(r Response) (map[string]string, error) {
		return t.Parse(r.Text, required, optional...)
	}
}

// JSONParser returns a parser for CallParsed that decodes the answer's JSON
// object into a T and validates it. See parse.JSON.
func JSONParser[T any]() func(Response) (T, error) {
	return func(r Response) (T, error) {
		var v T
		err := parse.JSON(r.Text, &v)
		return v, err
	}
}

// PingResult is what Ping learned from one tiny request.
type PingResult struct {
	Endpoint string
	Model    string // model the server says answered
	Latency  time.Duration
	Usage    Usage
	CostUSD  float64
	Text     string
	Attempts int
	Headers  http.Header // rate-limit headers the server returned
}

// Ping sends one tiny request for role, bypassing the cache, and reports
// latency, model, usage and the rate-limit headers. It goes through the
// endpoint's limits and retries like any call and is recorded with stage
// "ping". Errors are those of Call; a *FatalError here means the
// configuration is wrong.
func (c *Client) Ping(ctx context.Context, role string) (PingResult, error) {
	if role == EmbedderRole && c.HasEmbedder(role) {
		return c.pingEmbedder(ctx, role)
	}
	maxTokens := 16
	resp, err := c.Call(ctx, Request{
		Role:     role,
		Stage:    "ping",
		Messages: []conv.Message{{Role: conv.User, Content: "Reply with the single word: pong"}},
		Params:   Params{MaxTokens: &maxTokens},
		NoCache:  true,
	})
	return PingResult{
		Endpoint: resp.Endpoint, Model: resp.Model, Latency: resp.Latency, Usage: resp.Usage,
		CostUSD: resp.CostUSD, Text: resp.Text, Attempts: resp.Attempts, Headers: resp.Headers,
	}, err
}
