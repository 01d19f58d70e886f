package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"golang.org/x/time/rate"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// Options configure a Client. Endpoints and Roles come from the run's
// configuration (parsed in cmd); everything else has a usable default.
type Options struct {
	Endpoints []Endpoint
	// Roles maps role names to endpoints. A role without a binding uses the
	// DefaultRole binding, and with a single endpoint and no bindings every
	// role uses that endpoint.
	Roles map[string]RoleBinding

	Cache    Cache    // nil: no cache
	NoCache  bool     // neither read nor write the cache (--no-cache)
	Recorder Recorder // nil: calls are not recorded
	Budget   *Budget  // nil: no cap
	// Deferrer queues the requests of roles in batch mode (an endpoint or
	// role with Mode ModeBatch) that the cache cannot answer; Call then
	// returns ErrDeferred. Batch mode needs a Cache and a Deferrer.
	Deferrer Deferrer

	// Stop, when closed, makes calls give up their waits (for a slot, a
	// rate-limit token, a pause, the wait before a retry) with ErrStopped,
	// while requests already sent finish and are cached: the first Ctrl-C
	// of a graceful stop. nil never stops.
	Stop <-chan struct{}

	// Estimate counts the tokens of a text, for TPM charges and budget
	// reservations before a call. Default: len(text)/4.
	Estimate func(string) int
	// CompletionEstimate is the completion size assumed for a request that
	// gives neither Request.CompletionEstimate nor max tokens. Default 512.
	CompletionEstimate int

	// OnEvent receives retries, 429s, pauses, breaker and concurrency
	// changes. It is called synchronously from the calling goroutine, so it
	// must be quick and safe for concurrent use.
	OnEvent func(Event)

	// ParseWarnAfter and ParseWarnWithin set the early warning of a stage
	// whose answers do not parse: when ParseWarnAfter of a stage's first
	// ParseWarnWithin answers (CallParsed, retries included) were
	// rejected by its parser, one EventParseFailures is sent with an
	// example. Defaults 5 and 20.
	ParseWarnAfter  int
	ParseWarnWithin int

	HTTPClient  *http.Client  // default: a client tuned for many parallel calls
	BackoffBase time.Duration // first retry waits up to this (full jitter); default 500ms
	BackoffMax  time.Duration // cap on any backoff; default 60s
}

// Schema is a JSON Schema for structured output. Build Schema.Schema with
// parse.Schema from the struct the answer decodes into.
type Schema struct {
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema"`
}

// Request is one chat-completion request.
type Request struct {
	Role     string // selects the endpoint and parameter overrides
	Stage    string // for accounting only; not part of the cache key
	Messages []conv.Message
	Params   Params // overrides for this call

	// SampleIndex distinguishes N samples of the same prompt (temperature >
	// 0): each index is its own cache entry. When a seed is set, the seed
	// sent is derived from it and the index.
	SampleIndex int
	// Reroll counts fresh draws after a rejected (malformed) answer;
	// CallParsed sets it. Like SampleIndex it changes the cache key and the
	// derived seed, and it never collides with a sample index.
	Reroll int

	JSON   bool    // ask for a JSON object when the endpoint supports it
	Schema *Schema // and for this schema when it supports structured output

	// CompletionEstimate is the expected completion size in tokens, used for
	// the TPM charge and the budget reservation before the call.
	CompletionEstimate int
	NoCache            bool // skip the cache for this call only

	// embed, set by Embed, makes this an embeddings request for these
	// texts (Messages and the chat parameters are then unused).
	embed []string
}

// Response is the answer to a Request.
type Response struct {
	Text         string // the answer, reasoning removed
	Reasoning    string // reasoning trace from a reasoning field or <think> blocks
	Content      string // the message content exactly as the server sent it
	Model        string // the model the server says answered
	FinishReason string
	Usage        Usage
	CostUSD      float64 // what this call cost; 0 when FromCache
	FromCache    bool
	Attempts     int           // HTTP attempts sent; 0 when FromCache
	Latency      time.Duration // wall time of Call
	Headers      http.Header   // rate-limit headers of the last answer
	Endpoint     string
	Key          string // cache key
}

// Client sends chat-completion requests to the endpoints bound to roles,
// within each endpoint's limits, retrying transient failures, answering
// repeated requests from the cache, and recording every call.
//
// A Client is safe for concurrent use and owns no goroutines. Limits are per
// endpoint and shared by every role and stage that uses it.
type Client struct {
	opts      Options
	endpoints map[string]*endpoint
	roles     map[string]RoleBinding

	mu      sync.Mutex
	flights map[string]*flight
	parsed  map[string]*parseTally // by stage: how its first answers parsed

	// onFollow, when set (by tests), is called as a call starts waiting
	// for an identical call in flight.
	onFollow func(key string)
}

type endpoint struct {
	cfg  Endpoint
	svc  openai.ChatCompletionService
	rpm  *rate.Limiter
	tpm  *tokenBucket
	conc *aimd
	gate *gate
	// reach measures how long the endpoint has been unreachable.
	reach reach
	// keyErr is set when the endpoint's key variable is empty (see
	// Endpoint.CheckKey); the endpoint then sends nothing.
	keyErr error
	// embeds: the embedder role is bound to this endpoint (see
	// EmbedderRole); no chat role may be.
	embeds bool
}

// flight is a cache miss being fetched; identical requests wait for it
// instead of paying for the same answer again. The leader fills in the
// result before closing done.
type flight struct {
	done     chan struct{}
	resp     Response
	err      error
	answered bool // resp holds an answer (err may still report a cache or record failure)
	shared   bool // followers take resp/err; false: the leader gave up, try again
}

// RequestKeyHeader is the header in which every request carries its cache
// key (see Client.Key): a hash of the request, nothing secret. Servers
// ignore it; test servers and proxies can use it to recognise a request
// sent again.
const RequestKeyHeader = "X-Ac3-Request-Key"

// New builds a Client. It checks that every endpoint has a name, base URL
// and model, that names are unique, and that every role names an endpoint.
// It sends nothing.
func New(opts Options) (*Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("creating llm client: no endpoint configured (set OPENAI_BASE_URL / OPENAI_API_KEY or add one to the config)")
	}
	if opts.Estimate == nil {
		opts.Estimate = func(s string) int { return len(s) / 4 }
	}
	if opts.CompletionEstimate <= 0 {
		opts.CompletionEstimate = 512
	}
	if opts.ParseWarnAfter <= 0 {
		opts.ParseWarnAfter = 5
	}
	if opts.ParseWarnWithin < opts.ParseWarnAfter {
		opts.ParseWarnWithin = max(20, opts.ParseWarnAfter)
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 500 * time.Millisecond
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = 60 * time.Second
	}
	if opts.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		tr.MaxIdleConns = 512
		opts.HTTPClient = &http.Client{Transport: tr}
	}
	c := &Client{opts: opts, endpoints: map[string]*endpoint{}, roles: map[string]RoleBinding{}, flights: map[string]*flight{}, parsed: map[string]*parseTally{}}
	for _, ep := range opts.Endpoints {
		switch {
		case ep.Name == "":
			return nil, errors.New("creating llm client: an endpoint has no name")
		case ep.BaseURL == "":
			return nil, fmt.Errorf("creating llm client: endpoint %s: no base URL", ep.Name)
		case ep.Model == "":
			return nil, fmt.Errorf("creating llm client: endpoint %s: no model", ep.Name)
		case c.endpoints[ep.Name] != nil:
			return nil, fmt.Errorf("creating llm client: endpoint %s defined twice", ep.Name)
		}
		if err := CheckKind(ep.Kind); err != nil {
			return nil, fmt.Errorf("creating llm client: endpoint %s: %w", ep.Name, err)
		}
		if ep.Output != "" && ep.Output != parse.Tags && ep.Output != parse.JSONSchema {
			return nil, fmt.Errorf("creating llm client: endpoint %s: output %q: valid: %s, %s", ep.Name, ep.Output, parse.Tags, parse.JSONSchema)
		}
		ep = ep.withDefaults()
		e := &endpoint{
			cfg:  ep,
			svc:  openai.NewChatCompletionService(serviceOptions(ep, opts.HTTPClient)...),
			rpm:  newRPMLimiter(ep.Limits.RPM),
			tpm:  newTokenBucket(ep.Limits.TPM),
			conc: newAIMD(ep.Limits.Concurrency, ep.Limits.MinConcurrency),
			gate: &gate{threshold: ep.BreakerThreshold, cooldown: ep.BreakerCooldown},
		}
		// An endpoint whose key variable is empty is built all the same
		// (a dry run prices its calls, batch export writes them to a file)
		// but refuses every call, as one whose key was rejected does:
		// nothing is ever sent to it without its key.
		var ke *KeyError
		if errors.As(ep.CheckKey(), &ke) {
			e.keyErr = fatalKeyError{ke}
			e.gate.setFatal(e.keyErr)
		}
		c.endpoints[ep.Name] = e
	}
	for role, b := range opts.Roles {
		if c.endpoints[b.Endpoint] == nil {
			return nil, fmt.Errorf("creating llm client: role %s: unknown endpoint %q", role, b.Endpoint)
		}
		c.roles[role] = b
	}
	if b, ok := c.roles[EmbedderRole]; ok {
		c.endpoints[b.Endpoint].embeds = true
		for _, role := range sortedKeys(c.roles) {
			if role != EmbedderRole && c.roles[role].Endpoint == b.Endpoint {
				return nil, fmt.Errorf("creating llm client: role %s and the %s role are both bound to %s: an embedding model answers /v1/embeddings, not chat requests; give each its own model", role, EmbedderRole, b.Endpoint)
			}
		}
	}
	for _, ep := range c.endpoints {
		if ep.cfg.Mode != ModeOnline && ep.cfg.Mode != ModeBatch {
			return nil, fmt.Errorf("creating llm client: endpoint %s: unknown mode %q (online or batch)", ep.cfg.Name, ep.cfg.Mode)
		}
	}
	for role, b := range c.roles {
		if b.Mode != ModeOnline && b.Mode != ModeBatch {
			return nil, fmt.Errorf("creating llm client: role %s: unknown mode %q (online or batch)", role, b.Mode)
		}
	}
	if len(c.roles) == 0 && len(opts.Endpoints) == 1 {
		c.roles[DefaultRole] = RoleBinding{Endpoint: opts.Endpoints[0].Name}
	}
	return c, nil
}

// used reports whether a role's calls can reach the endpoint named name:
// one a role binds, or any endpoint when no role is bound.
func (o Options) used(name string) bool {
	if len(o.Roles) == 0 {
		return true
	}
	for _, b := range o.Roles {
		if b.Endpoint == name {
			return true
		}
	}
	return false
}

// CheckKeys returns the *KeyError of the first endpoint a role uses whose
// key variable is unset or empty (see Endpoint.CheckKey), followed by the
// others' messages, or nil when each has its key. A run checks it before
// its first step, so that an unset variable stops it at once rather than
// at its first model stage; it sends nothing.
func (o Options) CheckKeys() error {
	var first error
	var rest []string
	seen := map[string]bool{}
	for _, ep := range o.Endpoints {
		err := ep.CheckKey()
		if err == nil || !o.used(ep.Name) || seen[err.Error()] {
			continue // models of one endpoint share its message
		}
		seen[err.Error()] = true
		if first == nil {
			first = err
		} else {
			rest = append(rest, err.Error())
		}
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w; %s", first, strings.Join(rest, "; "))
	}
	return first
}

// Keyless names the endpoints a role uses that are sent no API key: they
// name no key variable and have no key, as a local server needs none.
func (o Options) Keyless() []string {
	var out []string
	for _, ep := range o.Endpoints {
		if ep.APIKeyEnv == "" && ep.APIKey == "" && o.used(ep.Name) {
			out = append(out, ep.Name)
		}
	}
	return out
}

// serviceOptions configures the SDK for one endpoint. The SDK's own retries
// are off (ours sit around it), and environment variables are not read: the
// endpoint says everything.
func serviceOptions(ep Endpoint, hc *http.Client) []option.RequestOption {
	opts := []option.RequestOption{
		option.WithBaseURL(strings.TrimRight(ep.BaseURL, "/") + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if ep.APIKey != "" {
		if ep.APIKeyHeader != "" {
			opts = append(opts, option.WithHeader(ep.APIKeyHeader, string(ep.APIKey)))
		} else {
			opts = append(opts, option.WithAPIKey(string(ep.APIKey)))
		}
	}
	for _, k := range sortedKeys(ep.Headers) {
		opts = append(opts, option.WithHeader(k, ep.Headers[k]))
	}
	for _, k := range sortedKeys(ep.Query) {
		opts = append(opts, option.WithQuery(k, ep.Query[k]))
	}
	return opts
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Roles returns the role names that have a binding, sorted.
func (c *Client) Roles() []string { return sortedKeys(c.roles) }

// Endpoint returns the configuration of the endpoint a role uses (with
// defaults filled in), for dry runs and status lines. Its APIKey prints as
// "[redacted]".
func (c *Client) Endpoint(role string) (Endpoint, error) {
	ep, _, err := c.resolve(role)
	if err != nil {
		return Endpoint{}, err
	}
	return ep.cfg, nil
}

// Output reports how stages should ask role's model for their answers
// (Endpoint.Output with its default filled in), parse.Tags for an unknown
// role. A stage that gets parse.JSONSchema sends its schema in
// Request.Schema and reads the answer as one JSON object.
func (c *Client) Output(role string) parse.Output {
	if c == nil {
		return parse.Tags
	}
	ep, _, err := c.resolve(role)
	if err != nil {
		return parse.Tags
	}
	return ep.cfg.Output
}

// Concurrency reports the current adaptive concurrency limit of the endpoint
// a role uses.
func (c *Client) Concurrency(role string) int {
	ep, _, err := c.resolve(role)
	if err != nil {
		return 0
	}
	return ep.conc.current()
}

func (c *Client) resolve(role string) (*endpoint, Params, error) {
	b, ok := c.roles[role]
	if !ok {
		b, ok = c.roles[DefaultRole]
	}
	if !ok {
		return nil, Params{}, fmt.Errorf("resolving role %q: %w", role, ErrUnknownRole)
	}
	ep := c.endpoints[b.Endpoint]
	return ep, ep.cfg.Params.Merge(b.Params), nil
}

// prepared is a request resolved against its endpoint.
type prepared struct {
	ep       *endpoint
	params   Params
	jsonMode JSONMode
	key      string
	promptTk int
	complTk  int
	embed    []string // an embeddings request's texts (see Request.embed)
}

func (c *Client) prepare(req Request) (*prepared, error) {
	ep, params, err := c.resolve(req.Role)
	if err != nil {
		return nil, err
	}
	params = params.Merge(req.Params)
	if params.Seed != nil && (req.SampleIndex != 0 || req.Reroll != 0) {
		s := deriveSeed(*params.Seed, req.SampleIndex, req.Reroll)
		params.Seed = &s
	}
	if req.embed != nil {
		return c.prepareEmbed(req, ep, params)
	}
	mode := JSONOff
	switch {
	case req.Schema != nil && ep.cfg.Output == parse.JSONSchema:
		// Structured output: the stage asks for it only when Output says the
		// endpoint enforces it, whatever its JSONMode.
		mode = JSONSchema
	case req.JSON || req.Schema != nil:
		mode = ep.cfg.JSONMode
		if mode == JSONSchema && req.Schema == nil {
			mode = JSONObject
		}
	}
	cr := canonicalRequest{
		V: keyVersion, Model: ep.cfg.Model, Messages: req.Messages, Params: params,
		MaxField: ep.cfg.MaxTokensField, JSON: string(mode), Sample: req.SampleIndex, Reroll: req.Reroll,
	}
	if mode == JSONSchema {
		cr.Schema = req.Schema
	}
	key, err := cr.key()
	if err != nil {
		return nil, fmt.Errorf("hashing request: %w", err)
	}
	p := &prepared{ep: ep, params: params, jsonMode: mode, key: key, promptTk: c.EstimatePrompt(req.Messages)}
	switch {
	case req.CompletionEstimate > 0:
		p.complTk = req.CompletionEstimate
	case params.MaxTokens != nil && *params.MaxTokens > 0:
		p.complTk = *params.MaxTokens
	default:
		p.complTk = c.opts.CompletionEstimate
	}
	return p, nil
}

// deriveSeed mixes a configured seed with the sample index and reroll count,
// so distinct samples are distinct draws even with a fixed seed.
func deriveSeed(seed int64, sample, reroll int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", seed, sample, reroll)
	return int64(h.Sum64() & (1<<31 - 1))
}

// Key returns the cache key of req (see Cache): a SHA-256 over the model,
// messages, effective parameters, JSON mode and schema, sample index and
// reroll count. It contains nothing secret.
func (c *Client) Key(req Request) (string, error) {
	p, err := c.prepare(req)
	if err != nil {
		return "", err
	}
	return p.key, nil
}

// EstimatePrompt estimates the prompt tokens of messages with the configured
// estimator, plus a few tokens of framing per message.
func (c *Client) EstimatePrompt(msgs []conv.Message) int {
	n := 3
	for _, m := range msgs {
		n += 4 + c.opts.Estimate(m.Content)
	}
	return n
}

// EstimateCost estimates the dollar cost of a call by role with the given
// token counts, at the price of the role's endpoint (for --dry-run): its
// batch price when the role is in batch mode.
func (c *Client) EstimateCost(role string, promptTokens, completionTokens int) (float64, error) {
	return c.EstimateUsageCost(role, Usage{Prompt: promptTokens, Completion: completionTokens})
}

// EstimateUsageCost is EstimateCost for a call whose usage, cached prompt
// tokens included, is estimated: the price of u at role's model.
func (c *Client) EstimateUsageCost(role string, u Usage) (float64, error) {
	ep, _, err := c.resolve(role)
	if err != nil {
		return 0, err
	}
	price := ep.cfg.Price
	if c.modeOf(role, ep) == ModeBatch {
		price = price.ForBatch()
	}
	return price.Cost(u), nil
}

// Call sends req and returns the answer.
//
// It blocks while the endpoint's limits, pauses or circuit breaker hold the
// request back, and while retries wait; ctx cancels all of it, and
// Options.Stop and a reached budget end every wait (not a request already
// sent). A request already answered (in the cache, or by an identical call
// in flight) is answered at no cost without touching the limits: identical
// requests in flight at the same time are sent once.
//
// Rate-limit answers (429, and 503/529 with a Retry-After) are waited out
// for up to Limits.Patience; an endpoint that cannot be reached (DNS,
// refused connections, TLS) is retried until it has gone
// Limits.Unreachable without an answer; other transient failures (5xx,
// timeouts, resets, malformed bodies) are retried up to MaxAttempts.
//
// Errors: ErrUnknownRole for an unbound role; ErrBudgetExceeded (wrapped)
// when the budget refuses the estimate, or was reached while the call
// waited; ErrStopped when Options.Stop closed while it waited; a
// *FatalError (errors.Is ErrFatal) for 401/403/404 and exhausted quota,
// and an *UnreachableError (also fatal) for an endpoint unreachable for
// Limits.Unreachable, after either of which every call to that endpoint
// fails at once with the same error; the *KeyError (also fatal) of an
// endpoint whose key variable is empty, before anything is sent; a
// *CallError for 400/422 and other client errors, for 5xx once
// MaxAttempts are spent, and for 429 once Patience is spent; the
// context's error when ctx ends. A Cache or Recorder failure is returned wrapped, with
// a valid Response when the answer itself arrived.
func (c *Client) Call(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	p, err := c.prepare(req)
	if err != nil {
		return Response{}, err
	}
	if err := p.ep.gate.fatalErr(); err != nil {
		return Response{}, err
	}
	// With caching off for this call, its answer may not be reused at all,
	// not even by an identical call in flight.
	if c.opts.NoCache || req.NoCache {
		resp, _, err := c.fetch(ctx, req, p, start, false)
		return resp, err
	}
	useCache := c.opts.Cache != nil
	for {
		if useCache {
			cr, ok, err := c.opts.Cache.Get(ctx, p.key)
			if err != nil {
				return Response{}, fmt.Errorf("reading cache: %w", err)
			}
			if ok {
				return c.cacheHit(ctx, req, p, cr, start)
			}
			if c.opts.Deferrer != nil && c.modeOf(req.Role, p.ep) == ModeBatch {
				online, err := c.deferCall(ctx, req, p)
				if !online {
					return Response{Endpoint: p.ep.cfg.Name, Key: p.key}, err
				}
			}
		}
		f, leader := c.join(p.key)
		if leader {
			return c.lead(ctx, req, p, f, start, useCache)
		}
		if c.onFollow != nil {
			c.onFollow(p.key)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
		if f.shared {
			return c.follow(ctx, req, p, f, start)
		}
		// The leader's caller gave up before an answer came: look again.
	}
}

// lead fetches the answer for the flight f and shares the outcome with the
// calls waiting on it.
func (c *Client) lead(ctx context.Context, req Request, p *prepared, f *flight, start time.Time, useCache bool) (resp Response, err error) {
	defer func() { c.leave(p.key, f) }()
	if useCache {
		// An identical call may have stored its answer and left the flight
		// between our cache read and join: without a second look we would
		// pay for that answer again.
		cr, ok, gerr := c.opts.Cache.Get(ctx, p.key)
		if gerr != nil {
			err = fmt.Errorf("reading cache: %w", gerr)
			f.err, f.shared = err, true
			return Response{}, err
		}
		if ok {
			resp, err = c.cacheHit(ctx, req, p, cr, start)
			f.resp, f.answered, f.shared = resp, true, true
			return resp, err
		}
	}
	resp, answered, err := c.fetch(ctx, req, p, start, useCache)
	f.resp, f.err, f.answered = resp, err, answered
	// A leader that gave up (its caller's context ended) leaves nothing to
	// share: the followers have callers of their own and try again. Any
	// other outcome (an answer, a rejected request, a fatal error, a budget
	// or stop) is what the followers would get by sending it themselves.
	f.shared = answered || !(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
	return resp, err
}

// follow answers a call from the outcome of the identical call it waited for.
func (c *Client) follow(ctx context.Context, req Request, p *prepared, f *flight, start time.Time) (Response, error) {
	if !f.answered {
		rec := CallRecord{
			Time: start, Role: req.Role, Stage: req.Stage, Endpoint: p.ep.cfg.Name, Model: p.ep.cfg.Model,
			Key: p.key, Latency: time.Since(start), Status: StatusFailed, Error: errorText(f.err),
		}
		if IsFatal(f.err) {
			rec.Status = StatusFatal
		}
		if rerr := c.record(ctx, rec); rerr != nil {
			return Response{Endpoint: p.ep.cfg.Name, Key: p.key}, errors.Join(f.err, rerr)
		}
		return Response{Endpoint: p.ep.cfg.Name, Key: p.key}, f.err
	}
	r := f.resp
	return c.cacheHit(ctx, req, p, CachedResponse{
		Content: r.Content, Text: r.Text, Reasoning: r.Reasoning, Model: r.Model,
		FinishReason: r.FinishReason, Usage: r.Usage,
	}, start)
}

// fetch reserves budget, sends the request and stores and records the
// answer. It reports whether an answer arrived (the error may then be a
// cache or record failure).
func (c *Client) fetch(ctx context.Context, req Request, p *prepared, start time.Time, useCache bool) (Response, bool, error) {
	release := func(float64) {}
	if c.opts.Budget != nil {
		est := EstimateCost(p.ep.cfg.Price, p.promptTk, p.complTk)
		var err error
		release, err = c.opts.Budget.Reserve(est)
		if err != nil {
			return Response{}, false, fmt.Errorf("calling endpoint %s: %w", p.ep.cfg.Name, err)
		}
	}

	resp, status, err := c.send(ctx, c.waiter(ctx), req, p)
	resp.Latency = time.Since(start)
	resp.Endpoint = p.ep.cfg.Name
	resp.Key = p.key
	release(resp.CostUSD)

	rec := CallRecord{
		Time: start, Role: req.Role, Stage: req.Stage, Endpoint: p.ep.cfg.Name,
		Model: cmpOr(resp.Model, p.ep.cfg.Model), Key: p.key, Usage: resp.Usage,
		CostUSD: resp.CostUSD, Latency: resp.Latency, Attempts: resp.Attempts,
		Status: StatusOK, HTTPStatus: status,
	}
	if err != nil {
		rec.Status = StatusFailed
		if IsFatal(err) {
			rec.Status = StatusFatal
		}
		rec.Error = errorText(err)
		if rerr := c.record(ctx, rec); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return resp, false, err
	}
	var errs []error
	if useCache {
		cr := CachedResponse{
			Content: resp.Content, Text: resp.Text, Reasoning: resp.Reasoning, Model: resp.Model,
			FinishReason: resp.FinishReason, Usage: resp.Usage, CostUSD: resp.CostUSD, CreatedAt: time.Now().UTC(),
		}
		// The answer is paid for: store it even if the caller gave up meanwhile.
		if err := c.opts.Cache.Put(context.WithoutCancel(ctx), p.key, cr); err != nil {
			errs = append(errs, fmt.Errorf("writing cache: %w", err))
		}
	}
	if err := c.record(ctx, rec); err != nil {
		errs = append(errs, err)
	}
	return resp, true, errors.Join(errs...)
}

// waiter returns what this call's waits listen to.
func (c *Client) waiter(ctx context.Context) waiter {
	w := waiter{ctx: ctx, stop: c.opts.Stop}
	if c.opts.Budget != nil {
		w.budget = c.opts.Budget.Reached()
	}
	return w
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (c *Client) record(ctx context.Context, r CallRecord) error {
	if c.opts.Recorder == nil {
		return nil
	}
	if err := c.opts.Recorder.Record(context.WithoutCancel(ctx), r); err != nil {
		return fmt.Errorf("recording call: %w", err)
	}
	return nil
}

func (c *Client) cacheHit(ctx context.Context, req Request, p *prepared, cr CachedResponse, start time.Time) (Response, error) {
	resp := Response{
		Text: cr.Text, Reasoning: cr.Reasoning, Content: cr.Content, Model: cr.Model,
		FinishReason: cr.FinishReason, Usage: cr.Usage, FromCache: true,
		Latency: time.Since(start), Endpoint: p.ep.cfg.Name, Key: p.key,
	}
	err := c.record(ctx, CallRecord{
		Time: start, Role: req.Role, Stage: req.Stage, Endpoint: p.ep.cfg.Name,
		Model: cmpOr(cr.Model, p.ep.cfg.Model), Key: p.key, Usage: cr.Usage,
		Latency: resp.Latency, Status: StatusCached, FromCache: true,
	})
	return resp, err
}

func (c *Client) join(key string) (*flight, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.flights[key]; ok {
		return f, false
	}
	f := &flight{done: make(chan struct{})}
	c.flights[key] = f
	return f, true
}

// leave ends the flight f; its result must be filled in.
func (c *Client) leave(key string, f *flight) {
	c.mu.Lock()
	delete(c.flights, key)
	c.mu.Unlock()
	close(f.done)
}

func (c *Client) emit(ev Event) {
	if c.opts.OnEvent != nil {
		ev.Time = time.Now()
		c.opts.OnEvent(ev)
	}
}

// outcome classifies one attempt.
type outcome struct {
	status    int
	retry     bool
	limited   bool          // a rate-limit answer: waited out within Limits.Patience, not counted in MaxAttempts
	congested bool          // 429, 503 or 529: the server is overloaded; a signal for the concurrency limit
	wait      time.Duration // server-requested wait for this call
	hasWait   bool
	err       error
	refundTPM bool
	// unreachable: the endpoint cannot be reached (see unreachable);
	// bounded by Limits.Unreachable, not MaxAttempts.
	unreachable  bool
	reason, hint string
}

// send runs the attempt loop. It returns the last HTTP status seen.
//
// Two budgets bound it: failures that are not rate limits (5xx, timeouts,
// resets, malformed bodies) count against MaxAttempts; rate-limit answers
// only delay the call, each by what the server asked (or by backoff when it
// did not say), until Limits.Patience has passed since the first of them.
func (c *Client) send(ctx context.Context, w waiter, req Request, p *prepared) (Response, int, error) {
	ep := p.ep
	name := ep.cfg.Name
	body, extra := c.buildParams(req, p)
	extra = append(extra, option.WithHeader(RequestKeyHeader, p.key))
	var (
		last         outcome
		resp         Response
		failures     int       // attempts that failed other than by a rate limit or unreachability
		limitedRun   int       // rate-limit answers since the last other outcome, for backoff
		limitedSince time.Time // first rate-limit answer of this call
		downRun      int       // unreachable failures in a row, for backoff
	)
	for sent := 1; ; sent++ {
		if err := ep.gate.fatalErr(); err != nil {
			return resp, last.status, err
		}
		// The concurrency slot comes first: a request that took its rate
		// token and then queued for a slot would go out later in a burst.
		if err := ep.gate.wait(w); err != nil {
			return resp, last.status, err
		}
		sl, err := ep.conc.acquire(w)
		if err != nil {
			return resp, last.status, err
		}
		if err := c.waitTurn(w, ep, p.promptTk+p.complTk); err != nil {
			ep.conc.release()
			return resp, last.status, err
		}
		resp.Attempts = sent
		var (
			r   Response
			out outcome
		)
		if p.embed != nil {
			r, out = c.attemptEmbed(ctx, ep, p)
		} else {
			r, out = c.attempt(ctx, ep, body, extra)
		}
		ep.conc.release()
		now := time.Now()
		last = out
		if out.status > 0 {
			ep.reach.answered() // any HTTP answer shows the server is there
		}
		if h := r.Headers; h != nil {
			resp.Headers = h
			if d, ok := rateLimitPause(h, now); ok && d > 0 && ep.gate.pause(d) {
				c.emit(Event{Kind: EventPause, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: sent, Status: out.status, Wait: d})
			}
		}
		if out.err == nil {
			ep.tpm.adjust(r.Usage.Total() - (p.promptTk + p.complTk))
			if ep.gate.success() {
				c.emit(Event{Kind: EventBreakerClose, Endpoint: name, Role: req.Role, Stage: req.Stage})
			}
			if n, changed := ep.conc.succeeded(sl, now); changed {
				c.emit(Event{Kind: EventConcurrency, Endpoint: name, Concurrency: n})
			}
			r.Attempts = sent
			r.CostUSD = ep.cfg.Price.Cost(r.Usage)
			return r, out.status, nil
		}
		if out.refundTPM {
			ep.tpm.adjust(-(p.promptTk + p.complTk))
		}
		if ctx.Err() != nil {
			return resp, out.status, ctx.Err()
		}
		if !out.retry {
			if IsFatal(out.err) {
				ep.gate.setFatal(out.err)
				c.emit(Event{Kind: EventFatal, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: sent, Status: out.status, Err: out.err.Error()})
			}
			return resp, out.status, out.err
		}
		if out.congested {
			if n, changed := ep.conc.congested(sl, now); changed {
				c.emit(Event{Kind: EventConcurrency, Endpoint: name, Concurrency: n})
			}
		}
		var wait time.Duration
		if out.unreachable {
			// Not a server in trouble: the breaker and MaxAttempts are
			// for those. The endpoint's unreachable time bounds it, for
			// every call to it together.
			downRun++
			var first bool
			var fatal error
			wait, first, fatal = c.unreachableAfter(ep, downRun, out.reason, out.hint, now)
			if fatal != nil {
				ep.gate.setFatal(fatal)
				fatal = ep.gate.fatalErr() // the first call to give up set it
				c.emit(Event{Kind: EventFatal, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: sent, Err: errorText(fatal)})
				return resp, 0, fatal
			}
			if first {
				c.emit(Event{Kind: EventUnreachable, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: sent,
					Wait: ep.cfg.Limits.Unreachable, Err: out.err.Error()})
			}
			c.emit(Event{Kind: EventRetry, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: sent, Wait: wait, Err: out.err.Error()})
			if err := w.sleep(wait); err != nil {
				return resp, 0, err
			}
			continue
		}
		downRun = 0
		if out.limited {
			if limitedSince.IsZero() {
				limitedSince = now
			}
			limitedRun++
			wait = c.backoff(limitedRun)
			if out.hasWait {
				wait = jitter(out.wait)
			}
			c.emit(Event{Kind: EventRateLimited, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: sent, Status: out.status, Wait: wait})
			if waited := now.Sub(limitedSince); waited+wait > ep.cfg.Limits.Patience {
				return resp, out.status, fmt.Errorf("calling endpoint %s: still rate limited after %s of waiting (limits.patience %s): %w",
					name, waited.Round(time.Second), ep.cfg.Limits.Patience, out.err)
			}
		} else {
			limitedRun = 0
			failures++
			if ep.gate.failure() {
				n, _ := ep.conc.floor()
				c.emit(Event{Kind: EventBreakerOpen, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: sent,
					Status: out.status, Wait: ep.cfg.BreakerCooldown, Concurrency: n, Err: out.err.Error()})
			}
			if failures >= ep.cfg.MaxAttempts {
				return resp, out.status, fmt.Errorf("calling endpoint %s: giving up after %d failed attempts: %w", name, failures, out.err)
			}
			wait = c.backoff(failures)
			if out.hasWait {
				wait = jitter(out.wait)
			}
		}
		c.emit(Event{Kind: EventRetry, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: sent, Status: out.status, Wait: wait, Err: out.err.Error()})
		if err := w.sleep(wait); err != nil {
			return resp, out.status, err
		}
	}
}

// jitter adds up to a tenth to a wait the server asked for, so callers told
// to come back at the same moment do not all arrive together.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d/10+time.Millisecond)
}

// waitTurn waits for RPM and TPM budget, then checks the endpoint's gate
// again: a pause that began while we queued still applies.
func (c *Client) waitTurn(w waiter, ep *endpoint, tokens int) error {
	if err := w.rpmWait(ep.rpm); err != nil {
		return err
	}
	if err := ep.tpm.take(w, tokens); err != nil {
		return err
	}
	if err := ep.gate.wait(w); err != nil {
		ep.tpm.adjust(-tokens)
		return err
	}
	return nil
}

// backoff is exponential backoff with full jitter: a uniform wait in
// [0, min(max, base·2^(attempt-1))).
func (c *Client) backoff(attempt int) time.Duration {
	ceil := c.opts.BackoffBase << min(attempt-1, 20)
	if ceil <= 0 || ceil > c.opts.BackoffMax {
		ceil = c.opts.BackoffMax
	}
	return rand.N(ceil) + time.Millisecond
}

func (c *Client) buildParams(req Request, p *prepared) (openai.ChatCompletionNewParams, []option.RequestOption) {
	cp := openai.ChatCompletionNewParams{Model: shared.ChatModel(p.ep.cfg.Model)}
	for _, m := range req.Messages {
		switch m.Role {
		case conv.System:
			cp.Messages = append(cp.Messages, openai.SystemMessage(m.Content))
		case conv.Assistant:
			cp.Messages = append(cp.Messages, openai.AssistantMessage(m.Content))
		default:
			// Tool output reaches a chat model as user text: curated
			// contexts carry no tool-call ids to attach it to.
			cp.Messages = append(cp.Messages, openai.UserMessage(m.Content))
		}
	}
	pr := p.params
	if pr.Temperature != nil {
		cp.Temperature = openai.Float(*pr.Temperature)
	}
	if pr.TopP != nil {
		cp.TopP = openai.Float(*pr.TopP)
	}
	if pr.Seed != nil {
		cp.Seed = openai.Int(*pr.Seed)
	}
	if pr.MaxTokens != nil {
		if p.ep.cfg.MaxTokensField == "max_completion_tokens" {
			cp.MaxCompletionTokens = openai.Int(int64(*pr.MaxTokens))
		} else {
			cp.MaxTokens = openai.Int(int64(*pr.MaxTokens))
		}
	}
	if len(pr.Stop) > 0 {
		cp.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: pr.Stop}
	}
	if pr.ReasoningEffort != "" {
		cp.ReasoningEffort = shared.ReasoningEffort(pr.ReasoningEffort)
	}
	switch p.jsonMode {
	case JSONObject:
		cp.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	case JSONSchema:
		cp.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: cmpOr(req.Schema.Name, "answer"), Schema: req.Schema.Schema, Strict: openai.Bool(true),
			},
		}}
	}
	var extra []option.RequestOption
	for _, k := range sortedKeys(pr.Extra) {
		extra = append(extra, option.WithJSONSet(k, pr.Extra[k]))
	}
	return cp, extra
}

// rawAnswer is the part of a chat completion the SDK's types do not cover:
// the reasoning fields of vLLM, llama.cpp, DeepSeek (reasoning_content) and
// OpenRouter (reasoning), and the prompt-cache counts of servers that do not
// use OpenAI's prompt_tokens_details.cached_tokens.
type rawAnswer struct {
	Choices []struct {
		Message struct {
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        any    `json:"reasoning"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		CacheRead int `json:"cache_read_input_tokens"` // Anthropic-compatible proxies
		CacheHit  int `json:"prompt_cache_hit_tokens"` // DeepSeek
	} `json:"usage"`
	Timings struct { // llama.cpp server
		CacheN  int `json:"cache_n"`
		PromptN int `json:"prompt_n"`
	} `json:"timings"`
	TokensCached int `json:"tokens_cached"` // older llama.cpp
}

// cachedPrompt returns u with the prompt tokens served from the server's
// prompt cache filled in from whichever field the server reports them in.
func (raw rawAnswer) cachedPrompt(u Usage) Usage {
	if u.CachedPrompt > 0 {
		return u
	}
	switch {
	case raw.Usage.CacheRead > 0:
		u.CachedPrompt = raw.Usage.CacheRead
	case raw.Usage.CacheHit > 0:
		u.CachedPrompt = raw.Usage.CacheHit
	case raw.Timings.CacheN > 0:
		u.CachedPrompt = raw.Timings.CacheN
		// A llama.cpp that counts only the tokens it evaluated reports
		// prompt_tokens equal to prompt_n; the prompt is both parts.
		if u.Prompt == raw.Timings.PromptN {
			u.Prompt += raw.Timings.CacheN
		}
	case raw.TokensCached > 0:
		u.CachedPrompt = raw.TokensCached
	}
	u.CachedPrompt = min(u.CachedPrompt, u.Prompt)
	return u
}

// attempt sends one HTTP request and classifies the result.
func (c *Client) attempt(ctx context.Context, ep *endpoint, body openai.ChatCompletionNewParams, extra []option.RequestOption) (Response, outcome) {
	actx, cancel := context.WithTimeout(ctx, ep.cfg.Timeout)
	defer cancel()
	var hr *http.Response
	opts := append(slices.Clip(extra), option.WithResponseInto(&hr))
	cc, err := ep.svc.New(actx, body, opts...)
	var r Response
	if hr != nil {
		r.Headers = rateLimitHeaders(hr.Header)
	}
	if err != nil {
		return r, c.classify(ctx, actx, ep, hr, err)
	}
	if cc == nil || len(cc.Choices) == 0 {
		return r, outcome{status: statusOf(hr), retry: true, err: fmt.Errorf("endpoint %s: answer has no choices", ep.cfg.Name)}
	}
	headers := r.Headers
	r = fromCompletion(cc)
	r.Headers = headers
	return r, outcome{status: statusOf(hr)}
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func statusOf(hr *http.Response) int {
	if hr == nil {
		return 0
	}
	return hr.StatusCode
}

// classify turns an attempt's error into an outcome. The HTTP response the
// SDK captured is the source of truth for the status, because servers that
// are not OpenAI shape their error bodies differently.
func (c *Client) classify(ctx, actx context.Context, ep *endpoint, hr *http.Response, err error) outcome {
	name := ep.cfg.Name
	if ctx.Err() != nil {
		return outcome{err: ctx.Err()}
	}
	if actx.Err() != nil {
		return outcome{retry: true, err: fmt.Errorf("endpoint %s: no answer within %s", name, ep.cfg.Timeout)}
	}
	if hr == nil || hr.StatusCode < 400 {
		// Transport failures (reset, EOF, refused) and unreadable bodies
		// (truncated JSON) are worth another try.
		o := outcome{status: statusOf(hr), retry: true, err: fmt.Errorf("endpoint %s: %s", name, transportReason(err))}
		if hr == nil {
			o.reason, o.hint, o.unreachable = unreachable(err)
		}
		return o
	}
	status := hr.StatusCode
	msg, raw := errorBody(hr, err)
	ce := &CallError{Endpoint: name, Status: status, Message: msg, Raw: raw}
	if fe := fatalStatus(ep.cfg, status, msg, raw, modelNotFound(ep.cfg)); fe != nil {
		return outcome{status: status, err: fe}
	}
	switch {
	case status == http.StatusTooManyRequests:
		if strings.Contains(strings.ToLower(msg), "request too large") {
			// One request bigger than the tokens-per-minute limit: no wait
			// makes it fit, so it fails its unit now.
			return outcome{status: status, err: ce, refundTPM: true}
		}
		ce.Retryable = true
		o := outcome{status: status, retry: true, limited: true, congested: true, err: ce, refundTPM: true}
		o.wait, o.hasWait = retryAfter(hr.Header, time.Now())
		if !o.hasWait {
			o.wait, o.hasWait = rateLimitPause(hr.Header, time.Now())
		}
		return o
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		ce.Retryable = true
		// 503 and 529 are how overloaded servers (vLLM behind a proxy,
		// providers under load) say "too many": a signal for the
		// concurrency limit. With a Retry-After they are a rate limit like
		// a 429, waited out within the patience; without one they may be a
		// server in trouble and count against MaxAttempts.
		overloaded := status == http.StatusServiceUnavailable || status == 529
		o := outcome{status: status, retry: true, congested: overloaded, err: ce}
		o.wait, o.hasWait = retryAfter(hr.Header, time.Now())
		o.limited = overloaded && o.hasWait
		return o
	}
	return outcome{status: status, err: ce, refundTPM: true}
}

// errorBody returns the server's message and the raw body of an error
// answer. The SDK re-populates the body after reading it.
func errorBody(hr *http.Response, err error) (string, string) {
	var raw []byte
	if hr.Body != nil {
		raw, _ = io.ReadAll(io.LimitReader(hr.Body, 4096))
		hr.Body.Close()
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && apiErr.Message != "" {
		return apiErr.Message, string(raw)
	}
	// Other servers: {"error":"…"}, {"message":"…"}, {"detail":"…"}.
	var shapes struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		Detail  any    `json:"detail"`
	}
	if json.Unmarshal(raw, &shapes) == nil {
		switch e := shapes.Error.(type) {
		case string:
			return e, string(raw)
		case map[string]any:
			if m, ok := e["message"].(string); ok {
				return m, string(raw)
			}
		}
		if shapes.Message != "" {
			return shapes.Message, string(raw)
		}
		if d, ok := shapes.Detail.(string); ok {
			return d, string(raw)
		}
	}
	return truncate(strings.TrimSpace(string(raw)), 300), string(raw)
}

// transportReason names a transport failure without echoing the URL (the
// SDK's *url.Error includes it).
func transportReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed before the answer was complete"
	case errors.As(err, &ne) && ne.Timeout():
		return "network timeout"
	case strings.Contains(err.Error(), "parsing response json"), strings.Contains(err.Error(), "unexpected end of JSON"):
		return "malformed answer body: " + lastPart(err.Error())
	}
	return "transport error: " + lastPart(err.Error())
}

// lastPart keeps the text after the last ": ", which drops URL-bearing
// prefixes such as `Post "https://…": `.
func lastPart(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
