package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ac3/ac3/pipeline/llm/parse"
)

// ErrDeferred is returned by Client.Call for a request of a role in batch
// mode that the cache cannot answer: the request was handed to the
// Deferrer, to be sent in a batch, and nothing was charged. Callers leave
// the unit pending (not failed); the stage runs again once the batch's
// answers are in the cache.
var ErrDeferred = errors.New("deferred to a batch")

// DeferredRequest is a request handed to a Deferrer: what a batch input
// line needs (the key as custom_id, the chat-completions body) and what the
// run records about it.
type DeferredRequest struct {
	Key      string
	Endpoint string // endpoint name
	Model    string
	Role     string
	Stage    string
	// Body is the chat-completions request body exactly as it would be
	// sent online (model, messages, parameters, response format).
	Body json.RawMessage
	// EstimateUSD is the estimated cost at the endpoint's batch price.
	EstimateUSD float64
}

// Decision is what a Deferrer decided about a request.
type Decision int

// The decisions.
const (
	// Deferred: the request is new in the queue; Call returns ErrDeferred.
	Deferred Decision = iota
	// Waiting: the request was already queued or is in a live batch; Call
	// returns ErrDeferred without counting it again.
	Waiting
	// SendOnline: the request is a leftover of a batch (expired, failed,
	// cancelled, a per-request error) that the run's fallback sends
	// online; Call sends it as in online mode.
	SendOnline
)

// Deferrer queues the requests of roles in batch mode. The run file
// implements it; a batch driver later submits what it queued. Defer must
// be safe for concurrent use. An error fails the call: a *CallError for a
// request the batch answered with an error that the fallback does not
// retry (the unit fails as it would online), or a store error.
type Deferrer interface {
	Defer(ctx context.Context, r DeferredRequest) (Decision, error)
}

// BatchMode reports whether role's requests go through batches.
func (c *Client) BatchMode(role string) bool {
	ep, _, err := c.resolve(role)
	if err != nil {
		return false
	}
	return c.modeOf(role, ep) == ModeBatch
}

func (c *Client) modeOf(role string, ep *endpoint) Mode {
	b, ok := c.roles[role]
	if !ok {
		b = c.roles[DefaultRole]
	}
	if b.Mode != "" {
		return b.Mode
	}
	return ep.cfg.Mode
}

// deferCall hands a batch-mode request to the Deferrer. It reports
// whether the call should go on online.
func (c *Client) deferCall(ctx context.Context, req Request, p *prepared) (online bool, err error) {
	body, err := c.requestBody(req, p)
	if err != nil {
		return false, fmt.Errorf("encoding request for a batch: %w", err)
	}
	est := EstimateCost(p.ep.cfg.Price.ForBatch(), p.promptTk, p.complTk)
	release := func(float64) {}
	if c.opts.Budget != nil {
		// The estimate is held as spent until the run imports the answer
		// and records what it cost (a resumed run seeds its budget with
		// the estimates of the requests still waiting).
		release, err = c.opts.Budget.Reserve(est)
		if err != nil {
			return false, fmt.Errorf("deferring to a batch for endpoint %s: %w", p.ep.cfg.Name, err)
		}
	}
	d, err := c.opts.Deferrer.Defer(ctx, DeferredRequest{
		Key: p.key, Endpoint: p.ep.cfg.Name, Model: p.ep.cfg.Model, Role: req.Role, Stage: req.Stage,
		Body: body, EstimateUSD: est,
	})
	switch {
	case err != nil:
		release(0)
		return false, err
	case d == Deferred:
		release(est)
		return false, fmt.Errorf("request %.12s for endpoint %s: %w", p.key, p.ep.cfg.Name, ErrDeferred)
	case d == Waiting:
		release(0)
		return false, fmt.Errorf("request %.12s for endpoint %s: %w", p.key, p.ep.cfg.Name, ErrDeferred)
	}
	release(0)
	return true, nil
}

// requestBody is the JSON body the request would be sent with online.
func (c *Client) requestBody(req Request, p *prepared) (json.RawMessage, error) {
	if p.embed != nil {
		return embedBody(p)
	}
	cp, _ := c.buildParams(req, p)
	b, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	if len(p.params.Extra) == 0 {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range p.params.Extra {
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("extra field %s: %w", k, err)
		}
		m[k] = vb
	}
	return json.Marshal(m)
}

// RequestBody returns the JSON body req would be sent with, and its key
// (for exporting a stage's requests as a batch file).
func (c *Client) RequestBody(req Request) (key string, body json.RawMessage, err error) {
	p, err := c.prepare(req)
	if err != nil {
		return "", nil, err
	}
	body, err = c.requestBody(req, p)
	return p.key, body, err
}

// ParseCompletion reads a chat-completions answer body (a batch output
// line's response body) as the client reads an online answer: content,
// reasoning split off, model, finish reason, usage. A body that is not a
// completion, or has no choices, is an error.
func ParseCompletion(body []byte) (CachedResponse, error) {
	var cc openai.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		return CachedResponse{}, fmt.Errorf("malformed answer body: %w", err)
	}
	if len(cc.Choices) == 0 {
		return CachedResponse{}, errors.New("answer has no choices")
	}
	r := fromCompletion(&cc)
	return CachedResponse{Content: r.Content, Text: r.Text, Reasoning: r.Reasoning, Model: r.Model,
		FinishReason: r.FinishReason, Usage: r.Usage}, nil
}

// fromCompletion reads the answer of cc, which has at least one choice.
func fromCompletion(cc *openai.ChatCompletion) Response {
	var r Response
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
	// A raw body that does not decode whole gives nothing: a partly decoded
	// one must not supply the reasoning.
	ok := json.Unmarshal([]byte(cc.RawJSON()), &raw) == nil
	if ok {
		r.Usage = raw.cachedPrompt(r.Usage)
	}
	if ok && len(raw.Choices) > 0 {
		m := raw.Choices[0].Message
		fieldReasoning = m.ReasoningContent
		if s, ok := m.Reasoning.(string); ok && fieldReasoning == "" {
			fieldReasoning = s
		}
	}
	text, think := parse.SplitThink(msg.Content)
	r.Text = text
	r.Reasoning = strings.TrimSpace(strings.Join(nonEmpty(strings.TrimSpace(fieldReasoning), think), "\n\n"))
	return r
}

// BatchCost is what an answer with usage u costs at endpoint's batch price.
func (c *Client) BatchCost(endpoint string, u Usage) (float64, error) {
	ep, ok := c.endpoints[endpoint]
	if !ok {
		return 0, fmt.Errorf("pricing a batch answer: unknown endpoint %q", endpoint)
	}
	return ep.cfg.Price.ForBatch().Cost(u), nil
}

// EndpointNamed returns the configuration of the endpoint named name (with
// defaults filled in).
func (c *Client) EndpointNamed(name string) (Endpoint, bool) {
	ep, ok := c.endpoints[name]
	if !ok {
		return Endpoint{}, false
	}
	return ep.cfg, true
}

// RemoteBatch is a batch as the endpoint's batch API reports it.
type RemoteBatch struct {
	ID, Status, InputFile, OutputFile, ErrorFile string
	Total, Completed, Failed                     int
	Metadata                                     map[string]string
	Errors                                       []string // why a batch failed validation
}

// Terminal reports whether the batch will not change any more.
func (b RemoteBatch) Terminal() bool {
	switch b.Status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

// BatchAPI is an endpoint's files and batches API (OpenAI's, and the
// providers' that copy it), with the endpoint's key, headers and query.
//
// Its errors are classified as online calls' are: a rejected key (401), a
// forbidden resource (403), a missing resource or API (404) and an
// exhausted quota are a *FatalError, and an endpoint that cannot be
// reached is retried until it has been unreachable for its
// Limits.Unreachable, then is an *UnreachableError; both stop the run
// (errors.Is ErrFatal) with the same line as online.
type BatchAPI struct {
	name    string
	c       *Client
	ep      *endpoint
	files   openai.FileService
	batches openai.BatchService
}

// BatchAPI returns the batch API of the endpoint named name.
func (c *Client) BatchAPI(name string) (*BatchAPI, error) {
	ep, ok := c.endpoints[name]
	if !ok {
		return nil, fmt.Errorf("batch API: unknown endpoint %q", name)
	}
	opts := serviceOptions(ep.cfg, c.opts.HTTPClient)
	return &BatchAPI{name: name, c: c, ep: ep, files: openai.NewFileService(opts...), batches: openai.NewBatchService(opts...)}, nil
}

// call runs op, one request to the batch API described by what, and
// classifies its error: while the endpoint cannot be reached op is tried
// again with backoff, until the endpoint's unreachable time runs out.
func (a *BatchAPI) call(ctx context.Context, what string, op func(context.Context) error) error {
	if a.ep.keyErr != nil {
		return a.ep.keyErr // nothing is sent without the key
	}
	for n := 1; ; n++ {
		err := op(ctx)
		if err == nil {
			a.ep.reach.answered()
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("endpoint %s: %s: %w", a.name, what, ctx.Err())
		}
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			a.ep.reach.answered()
			notFound := "check the endpoint's base URL and that its server has a batch API (without one, batch.files: true queues the requests for 'ac3 batch export')"
			if fe := fatalStatus(a.ep.cfg, apiErr.StatusCode, apiErr.Message, apiErr.RawJSON(), notFound); fe != nil {
				return fe
			}
			return fmt.Errorf("endpoint %s: %s: %s", a.name, what, transportReason(err))
		}
		reason, hint, ok := unreachable(err)
		if !ok {
			return fmt.Errorf("endpoint %s: %s: %s", a.name, what, transportReason(err))
		}
		wait, first, fatal := a.c.unreachableAfter(a.ep, n, reason, hint, time.Now())
		if fatal != nil {
			a.c.emit(Event{Kind: EventFatal, Endpoint: a.name, Attempt: n, Err: errorText(fatal)})
			return fatal
		}
		if first {
			a.c.emit(Event{Kind: EventUnreachable, Endpoint: a.name, Attempt: n, Wait: a.ep.cfg.Limits.Unreachable, Err: "endpoint " + a.name + ": " + reason})
		}
		if err := (waiter{ctx: ctx}).sleep(wait); err != nil {
			return fmt.Errorf("endpoint %s: %s: %w", a.name, what, err)
		}
	}
}

// Upload uploads a batch input file and returns its id. An r that is not
// an io.Seeker is read into memory first, so that the upload can be tried
// again while the endpoint is unreachable.
func (a *BatchAPI) Upload(ctx context.Context, filename string, r io.Reader) (string, error) {
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		b, err := io.ReadAll(r)
		if err != nil {
			return "", fmt.Errorf("endpoint %s: reading %s to upload it: %w", a.name, filename, err)
		}
		rs = bytes.NewReader(b)
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", fmt.Errorf("endpoint %s: uploading %s: %w", a.name, filename, err)
	}
	var id string
	err = a.call(ctx, "uploading "+filename, func(ctx context.Context) error {
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return err
		}
		f, err := a.files.New(ctx, openai.FileNewParams{File: openai.File(rs, filename, "application/jsonl"), Purpose: openai.FilePurposeBatch})
		if err == nil {
			id = f.ID
		}
		return err
	})
	return id, err
}

// Create creates a batch over an uploaded input file (chat completions, or
// embeddings for the embedder's endpoint; 24-hour window) with metadata.
func (a *BatchAPI) Create(ctx context.Context, inputFile string, metadata map[string]string) (RemoteBatch, error) {
	url := openai.BatchNewParamsEndpointV1ChatCompletions
	if a.ep.embeds {
		url = openai.BatchNewParamsEndpointV1Embeddings
	}
	return a.batchCall(ctx, "creating a batch for file "+inputFile, func(ctx context.Context) (*openai.Batch, error) {
		return a.batches.New(ctx, openai.BatchNewParams{
			InputFileID: inputFile, Endpoint: url,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: shared.Metadata(metadata),
		})
	})
}

// Get retrieves a batch.
func (a *BatchAPI) Get(ctx context.Context, id string) (RemoteBatch, error) {
	return a.batchCall(ctx, "retrieving batch "+id, func(ctx context.Context) (*openai.Batch, error) {
		return a.batches.Get(ctx, id)
	})
}

// Cancel asks the endpoint to cancel a batch.
func (a *BatchAPI) Cancel(ctx context.Context, id string) (RemoteBatch, error) {
	return a.batchCall(ctx, "cancelling batch "+id, func(ctx context.Context) (*openai.Batch, error) {
		return a.batches.Cancel(ctx, id)
	})
}

// batchCall makes one call that answers with a batch, through a.call (what
// names it in errors), and converts the batch: Create, Get and Cancel
// differ only in the request.
func (a *BatchAPI) batchCall(ctx context.Context, what string, fn func(context.Context) (*openai.Batch, error)) (RemoteBatch, error) {
	var b *openai.Batch
	err := a.call(ctx, what, func(ctx context.Context) error {
		var err error
		b, err = fn(ctx)
		return err
	})
	if err != nil {
		return RemoteBatch{}, err
	}
	return remote(b), nil
}

// FindByInput looks, newest first among at most the last scan batches, for
// a batch created over inputFile: a run that was killed between creating
// a batch and recording it finds it again instead of creating another.
func (a *BatchAPI) FindByInput(ctx context.Context, inputFile string, scan int) (RemoteBatch, bool, error) {
	var (
		found RemoteBatch
		ok    bool
	)
	err := a.call(ctx, "listing batches", func(ctx context.Context) error {
		pager := a.batches.ListAutoPaging(ctx, openai.BatchListParams{Limit: param.NewOpt(int64(100))})
		for n := 0; n < scan && pager.Next(); n++ {
			b := pager.Current()
			if b.InputFileID == inputFile {
				found, ok = remote(&b), true
				return nil
			}
		}
		return pager.Err()
	})
	if err != nil {
		return RemoteBatch{}, false, err
	}
	return found, ok, nil
}

// Content opens a file's content (an output or error file).
func (a *BatchAPI) Content(ctx context.Context, fileID string) (io.ReadCloser, error) {
	var resp *http.Response
	err := a.call(ctx, "reading file "+fileID, func(ctx context.Context) error {
		var err error
		resp, err = a.files.Content(ctx, fileID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func remote(b *openai.Batch) RemoteBatch {
	r := RemoteBatch{
		ID: b.ID, Status: string(b.Status), InputFile: b.InputFileID, OutputFile: b.OutputFileID, ErrorFile: b.ErrorFileID,
		Total: int(b.RequestCounts.Total), Completed: int(b.RequestCounts.Completed), Failed: int(b.RequestCounts.Failed),
		Metadata: map[string]string(b.Metadata),
	}
	for _, e := range b.Errors.Data {
		s := e.Message
		if e.Line > 0 {
			s = fmt.Sprintf("line %d: %s", e.Line, s)
		}
		r.Errors = append(r.Errors, s)
	}
	return r
}
