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
}

type endpoint struct {
	cfg  Endpoint
	svc  openai.ChatCompletionService
	rpm  *rate.Limiter
	tpm  *tokenBucket
	conc *aimd
	gate *gate
}

// flight is a cache miss being fetched; identical requests wait for it
// instead of paying for the same answer again.
type flight struct {
	done chan struct{}
}

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
	c := &Client{opts: opts, endpoints: map[string]*endpoint{}, roles: map[string]RoleBinding{}, flights: map[string]*flight{}}
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
		ep = ep.withDefaults()
		c.endpoints[ep.Name] = &endpoint{
			cfg:  ep,
			svc:  openai.NewChatCompletionService(serviceOptions(ep, opts.HTTPClient)...),
			rpm:  newRPMLimiter(ep.Limits.RPM),
			tpm:  newTokenBucket(ep.Limits.TPM),
			conc: newAIMD(ep.Limits.Concurrency),
			gate: &gate{threshold: ep.BreakerThreshold, cooldown: ep.BreakerCooldown},
		}
	}
	for role, b := range opts.Roles {
		if c.endpoints[b.Endpoint] == nil {
			return nil, fmt.Errorf("creating llm client: role %s: unknown endpoint %q", role, b.Endpoint)
		}
		c.roles[role] = b
	}
	if len(c.roles) == 0 && len(opts.Endpoints) == 1 {
		c.roles[DefaultRole] = RoleBinding{Endpoint: opts.Endpoints[0].Name}
	}
	return c, nil
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
	mode := JSONOff
	if req.JSON || req.Schema != nil {
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
// token counts, at the price of the role's endpoint (for --dry-run).
func (c *Client) EstimateCost(role string, promptTokens, completionTokens int) (float64, error) {
	ep, _, err := c.resolve(role)
	if err != nil {
		return 0, err
	}
	return EstimateCost(ep.cfg.Price, promptTokens, completionTokens), nil
}

// Call sends req and returns the answer.
//
// It blocks while the endpoint's limits, pauses or circuit breaker hold the
// request back, and while retries wait; ctx cancels all of it. A request
// already answered (in the cache, or by an identical call in flight) is
// answered at no cost without touching the limits.
//
// Errors: ErrUnknownRole for an unbound role; ErrBudgetExceeded (wrapped)
// when the budget refuses the estimate; a *FatalError (errors.Is ErrFatal)
// for 401/403/404 and exhausted quota, after which every call to that
// endpoint fails at once with the same error; a *CallError for 400/422 and
// other client errors, and for 429/5xx once MaxAttempts are spent; the
// context's error when ctx ends. A Cache or Recorder failure is returned
// wrapped, with a valid Response when the answer itself arrived.
func (c *Client) Call(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	p, err := c.prepare(req)
	if err != nil {
		return Response{}, err
	}
	if err := p.ep.gate.fatalErr(); err != nil {
		return Response{}, err
	}
	useCache := c.opts.Cache != nil && !c.opts.NoCache && !req.NoCache
	if useCache {
		for {
			cr, ok, err := c.opts.Cache.Get(ctx, p.key)
			if err != nil {
				return Response{}, fmt.Errorf("reading cache: %w", err)
			}
			if ok {
				return c.cacheHit(ctx, req, p, cr, start)
			}
			f, leader := c.join(p.key)
			if leader {
				defer c.leave(p.key, f)
				break
			}
			select {
			case <-f.done: // the leader finished; look again
			case <-ctx.Done():
				return Response{}, ctx.Err()
			}
		}
	}

	release := func(float64) {}
	if c.opts.Budget != nil {
		est := EstimateCost(p.ep.cfg.Price, p.promptTk, p.complTk)
		release, err = c.opts.Budget.Reserve(est)
		if err != nil {
			return Response{}, fmt.Errorf("calling endpoint %s: %w", p.ep.cfg.Name, err)
		}
	}

	resp, status, err := c.send(ctx, req, p)
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
		rec.Error = err.Error()
		if rerr := c.record(ctx, rec); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return resp, err
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
	return resp, errors.Join(errs...)
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
	limited   bool          // 429
	congested bool          // 429, 503 or 529: the server is overloaded; lower concurrency
	wait      time.Duration // server-requested wait for this call
	hasWait   bool
	err       error
	refundTPM bool
}

// send runs the attempt loop. It returns the last HTTP status seen.
func (c *Client) send(ctx context.Context, req Request, p *prepared) (Response, int, error) {
	ep := p.ep
	name := ep.cfg.Name
	body, extra := c.buildParams(req, p)
	var last outcome
	var resp Response
	for attempt := 1; ; attempt++ {
		if err := ep.gate.fatalErr(); err != nil {
			return resp, last.status, err
		}
		// The concurrency slot comes first: a request that took its rate
		// token and then queued for a slot would go out later in a burst.
		if err := ep.gate.wait(ctx); err != nil {
			return resp, last.status, err
		}
		epoch, err := ep.conc.acquire(ctx)
		if err != nil {
			return resp, last.status, err
		}
		if err := c.waitTurn(ctx, ep, p.promptTk+p.complTk); err != nil {
			ep.conc.release()
			return resp, last.status, err
		}
		resp.Attempts = attempt
		r, out := c.attempt(ctx, ep, body, extra)
		ep.conc.release()
		last = out
		if h := r.Headers; h != nil {
			resp.Headers = h
			if d, ok := rateLimitPause(h, time.Now()); ok && d > 0 && ep.gate.pause(d) {
				c.emit(Event{Kind: EventPause, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: attempt, Status: out.status, Wait: d})
			}
		}
		if out.err == nil {
			ep.tpm.adjust(r.Usage.Total() - (p.promptTk + p.complTk))
			if ep.gate.success() {
				c.emit(Event{Kind: EventBreakerClose, Endpoint: name, Role: req.Role, Stage: req.Stage})
			}
			if n, changed := ep.conc.increase(); changed {
				c.emit(Event{Kind: EventConcurrency, Endpoint: name, Concurrency: n})
			}
			r.Attempts = attempt
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
				c.emit(Event{Kind: EventFatal, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: attempt, Status: out.status, Err: out.err.Error()})
			}
			return resp, out.status, out.err
		}
		if out.limited {
			c.emit(Event{Kind: EventRateLimited, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: attempt, Status: out.status, Wait: out.wait})
		}
		if out.congested {
			if n, changed := ep.conc.decrease(epoch); changed {
				c.emit(Event{Kind: EventConcurrency, Endpoint: name, Concurrency: n})
			}
			if out.hasWait && ep.gate.pause(out.wait) {
				c.emit(Event{Kind: EventPause, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: attempt, Status: out.status, Wait: out.wait})
			}
		}
		if ep.gate.failure() {
			n, _ := ep.conc.floor()
			c.emit(Event{Kind: EventBreakerOpen, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: attempt,
				Status: out.status, Wait: ep.cfg.BreakerCooldown, Concurrency: n, Err: out.err.Error()})
		}
		if attempt >= ep.cfg.MaxAttempts {
			return resp, out.status, fmt.Errorf("calling endpoint %s: giving up after %d attempts: %w", name, attempt, out.err)
		}
		wait := c.backoff(attempt)
		if out.hasWait {
			// Honour the server's wait, with a little jitter so callers
			// released together do not arrive together.
			wait = out.wait + rand.N(out.wait/10+time.Millisecond)
		}
		c.emit(Event{Kind: EventRetry, Endpoint: name, Role: req.Role, Stage: req.Stage, Attempt: attempt, Status: out.status, Wait: wait, Err: out.err.Error()})
		if err := sleep(ctx, wait); err != nil {
			return resp, out.status, err
		}
	}
}

// waitTurn waits for RPM and TPM budget, then checks the endpoint's gate
// again: a pause that began while we queued still applies.
func (c *Client) waitTurn(ctx context.Context, ep *endpoint, tokens int) error {
	if ep.rpm != nil {
		if err := ep.rpm.Wait(ctx); err != nil {
			return err
		}
	}
	if err := ep.tpm.take(ctx, tokens); err != nil {
		return err
	}
	if err := ep.gate.wait(ctx); err != nil {
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
// OpenRouter (reasoning).
type rawAnswer struct {
	Choices []struct {
		Message struct {
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        any    `json:"reasoning"`
		} `json:"message"`
	} `json:"choices"`
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
	msg := cc.Choices[0].Message
	r.Content = msg.Content
	r.Model = cc.Model
	r.FinishReason = string(cc.Choices[0].FinishReason)
	r.Usage = Usage{
		Prompt:       int(cc.Usage.PromptTokens),
		Completion:   int(cc.Usage.CompletionTokens),
		CachedPrompt: int(cc.Usage.PromptTokensDetails.CachedTokens),
		Reasoning:    int(cc.Usage.CompletionTokensDetails.ReasoningTokens),
	}
	var raw rawAnswer
	fieldReasoning := ""
	if json.Unmarshal([]byte(cc.RawJSON()), &raw) == nil && len(raw.Choices) > 0 {
		m := raw.Choices[0].Message
		fieldReasoning = m.ReasoningContent
		if s, ok := m.Reasoning.(string); ok && fieldReasoning == "" {
			fieldReasoning = s
		}
	}
	text, think := parse.SplitThink(msg.Content)
	r.Text = text
	r.Reasoning = strings.TrimSpace(strings.Join(nonEmpty(strings.TrimSpace(fieldReasoning), think), "\n\n"))
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
		return outcome{status: statusOf(hr), retry: true, err: fmt.Errorf("endpoint %s: %s", name, transportReason(err))}
	}
	status := hr.StatusCode
	msg, raw := errorBody(hr, err)
	ce := &CallError{Endpoint: name, Status: status, Message: msg, Raw: raw}
	switch {
	case status == http.StatusTooManyRequests:
		if strings.Contains(raw, "insufficient_quota") {
			return outcome{status: status, err: &FatalError{Endpoint: name, Status: status, Message: msg, Hint: "billing quota exhausted: check the account's plan and credits"}}
		}
		ce.Retryable = true
		o := outcome{status: status, retry: true, limited: true, congested: true, err: ce, refundTPM: true}
		o.wait, o.hasWait = retryAfter(hr.Header, time.Now())
		if !o.hasWait {
			o.wait, o.hasWait = rateLimitPause(hr.Header, time.Now())
		}
		return o
	case status == http.StatusUnauthorized:
		return outcome{status: status, err: &FatalError{Endpoint: name, Status: status, Message: msg, Hint: "check " + ep.cfg.APIKeyEnv}}
	case status == http.StatusForbidden:
		return outcome{status: status, err: &FatalError{Endpoint: name, Status: status, Message: msg, Hint: "the key may not use model " + ep.cfg.Model + "; check " + ep.cfg.APIKeyEnv + " and the account's access"}}
	case status == http.StatusNotFound:
		return outcome{status: status, err: &FatalError{Endpoint: name, Status: status, Message: msg, Hint: "check the model name " + ep.cfg.Model + " and the endpoint's base URL"}}
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		ce.Retryable = true
		// 503 and 529 are how overloaded servers (vLLM behind a proxy,
		// providers under load) say "too many": treat them like a 429 for
		// the concurrency limit and for any Retry-After they send.
		overloaded := status == http.StatusServiceUnavailable || status == 529
		o := outcome{status: status, retry: true, congested: overloaded, err: ce}
		o.wait, o.hasWait = retryAfter(hr.Header, time.Now())
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
