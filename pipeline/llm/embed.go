package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// EmbedderRole is the role whose model turns texts into vectors through
// POST /v1/embeddings (OpenAI's, vLLM's, llama.cpp's and Ollama's
// OpenAI-compatible endpoint). Unlike the chat roles it never falls back to
// the default binding: a run has an embedder only when the role is bound.
const EmbedderRole = "embedder"

// DefaultEmbedInputs is how many texts one embeddings request carries when
// the role's binding does not say (RoleBinding.Inputs). OpenAI accepts up
// to 2,048 inputs a request; local servers batch them on the GPU.
const DefaultEmbedInputs = 64

// maxEmbedWaiting bounds the requests of one Embed call waiting at once.
const maxEmbedWaiting = 64

// EmbedURL is the path of embeddings requests, and the url of their batch
// input lines.
const EmbedURL = "/v1/embeddings"

// EmbedRequest asks for the embeddings of texts.
type EmbedRequest struct {
	Role    string // default EmbedderRole
	Stage   string // for accounting only
	Input   []string
	NoCache bool // skip the cache for these calls only
}

// EmbedResponse holds one vector per input, in input order, as the server
// sent it (not normalized), and what the calls cost.
type EmbedResponse struct {
	Vectors [][]float32
	Model   string
	Usage   Usage   // prompt tokens of the paid calls
	CostUSD float64 // of the paid calls
	// Calls is how many requests the inputs were sent in (or found in the
	// cache as); Cached how many of them the cache answered.
	Calls, Cached int
}

// HasEmbedder reports whether role (EmbedderRole when "") is bound to an
// endpoint: a stage that can use embeddings falls back to what it does
// without them when it is not.
func (c *Client) HasEmbedder(role string) bool {
	if c == nil {
		return false
	}
	_, ok := c.roles[cmpOr(role, EmbedderRole)]
	return ok
}

// EmbedInputs is how many texts one request of role carries.
func (c *Client) EmbedInputs(role string) int {
	if b, ok := c.roles[cmpOr(role, EmbedderRole)]; ok && b.Inputs > 0 {
		return b.Inputs
	}
	return DefaultEmbedInputs
}

// Embed returns the embeddings of req.Input. The texts are sent in
// requests of at most EmbedInputs texts, consecutive in input order; each
// request goes through the same machinery as a chat call (Call): the
// endpoint's limits, retries and backoff, the budget, the cache keyed by
// the model, the effective parameters and the request's texts (so the same
// texts in the same requests are never paid for twice), one CallRecord per
// request, and batch mode (the request is queued and Embed returns an
// error wrapping ErrDeferred once every request has been tried).
//
// The role must be bound (HasEmbedder); an empty input is answered with no
// vectors and no call. A request that fails fails the whole Embed, with
// the first error.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	role := cmpOr(req.Role, EmbedderRole)
	if !c.HasEmbedder(role) {
		return EmbedResponse{}, fmt.Errorf("embedding: role %q is not bound to a model: %w", role, ErrUnknownRole)
	}
	for i, s := range req.Input {
		if strings.TrimSpace(s) == "" {
			return EmbedResponse{}, fmt.Errorf("embedding: input %d is empty (servers refuse empty inputs)", i)
		}
	}
	per := c.EmbedInputs(role)
	chunks := slices.Collect(slices.Chunk(req.Input, per))
	type part struct {
		resp Response
		vs   [][]float32
		err  error
	}
	parts := make([]part, len(chunks))
	var wg sync.WaitGroup
	// The endpoint's limits decide what is in flight; this only bounds the
	// goroutines waiting for them.
	sem := make(chan struct{}, maxEmbedWaiting)
	for i, ch := range chunks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, err := c.Call(ctx, Request{Role: role, Stage: req.Stage, NoCache: req.NoCache, embed: ch})
			parts[i].resp, parts[i].err = r, err
			if err == nil {
				parts[i].vs, parts[i].err = DecodeVectors(r.Content)
				if parts[i].err == nil && len(parts[i].vs) != len(ch) {
					parts[i].err = fmt.Errorf("embedding: request %.12s has %d vectors for %d inputs", r.Key, len(parts[i].vs), len(ch))
				}
			}
		}()
	}
	wg.Wait()
	out := EmbedResponse{Vectors: make([][]float32, 0, len(req.Input)), Calls: len(chunks)}
	var deferred, failed error
	for _, p := range parts {
		switch {
		case p.err == nil:
		case errors.Is(p.err, ErrDeferred):
			deferred = cmpErr(deferred, p.err)
			continue
		default:
			failed = cmpErr(failed, p.err)
			continue
		}
		out.Vectors = append(out.Vectors, p.vs...)
		out.Model = cmpOr(out.Model, p.resp.Model)
		if p.resp.FromCache {
			out.Cached++
			continue
		}
		out.Usage = out.Usage.Add(p.resp.Usage)
		out.CostUSD += p.resp.CostUSD
	}
	if failed != nil {
		return out, fmt.Errorf("embedding %d texts: %w", len(req.Input), failed)
	}
	if deferred != nil {
		return out, fmt.Errorf("embedding %d texts: %w", len(req.Input), deferred)
	}
	return out, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// embedBody is the JSON body of an embeddings request, online and in a
// batch line: the model, the texts and the role's extra fields.
func embedBody(p *prepared) (json.RawMessage, error) {
	m := map[string]any{"model": p.ep.cfg.Model, "input": p.embed}
	for k, v := range p.params.Extra {
		m[k] = v
	}
	return json.Marshal(m)
}

// attemptEmbed sends one embeddings request and classifies the result as
// attempt does a chat request's: an answer whose body does not hold one
// vector per input is malformed, and tried again. It is sent with net/http
// (the SDK's embeddings types would add a tenth of a megabyte to the
// binary), to the endpoint's base URL, query, headers and key as the SDK
// sends chat requests.
func (c *Client) attemptEmbed(ctx context.Context, ep *endpoint, p *prepared) (Response, outcome) {
	actx, cancel := context.WithTimeout(ctx, ep.cfg.Timeout)
	defer cancel()
	var r Response
	body, err := embedBody(p)
	if err != nil {
		return r, outcome{err: fmt.Errorf("endpoint %s: encoding an embeddings request: %w", ep.cfg.Name, err)}
	}
	u, err := url.Parse(strings.TrimRight(ep.cfg.BaseURL, "/") + "/embeddings")
	if err != nil {
		return r, outcome{err: fmt.Errorf("endpoint %s: base URL: %w", ep.cfg.Name, err)}
	}
	if len(ep.cfg.Query) > 0 {
		q := u.Query()
		for _, k := range sortedKeys(ep.cfg.Query) {
			q.Set(k, ep.cfg.Query[k])
		}
		u.RawQuery = q.Encode()
	}
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return r, outcome{err: fmt.Errorf("endpoint %s: %w", ep.cfg.Name, err)}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if ep.cfg.APIKey != "" {
		if ep.cfg.APIKeyHeader != "" {
			hreq.Header.Set(ep.cfg.APIKeyHeader, string(ep.cfg.APIKey))
		} else {
			hreq.Header.Set("Authorization", "Bearer "+string(ep.cfg.APIKey))
		}
	}
	for _, k := range sortedKeys(ep.cfg.Headers) {
		hreq.Header.Set(k, ep.cfg.Headers[k])
	}
	hreq.Header.Set(RequestKeyHeader, p.key)
	hr, err := c.opts.HTTPClient.Do(hreq)
	if err != nil {
		return r, c.classify(ctx, actx, ep, nil, err)
	}
	defer hr.Body.Close()
	r.Headers = rateLimitHeaders(hr.Header)
	if hr.StatusCode >= 400 {
		return r, c.classify(ctx, actx, ep, hr, fmt.Errorf("status %d", hr.StatusCode))
	}
	raw, err := io.ReadAll(hr.Body)
	if err != nil {
		return r, c.classify(ctx, actx, ep, hr, err)
	}
	cr, err := parseEmbeddings(raw, len(p.embed))
	if err != nil {
		return r, outcome{status: hr.StatusCode, retry: true, err: fmt.Errorf("endpoint %s: %w", ep.cfg.Name, err)}
	}
	r.Content, r.Text, r.Model, r.Usage = cr.Content, cr.Text, cr.Model, cr.Usage
	return r, outcome{status: hr.StatusCode}
}

// embeddingsAnswer is the part of an embeddings answer we read. An
// embedding is a JSON array of numbers, or (encoding_format base64) a
// string of little-endian float32s.
type embeddingsAnswer struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// ParseEmbeddings reads an embeddings answer body (an online answer, or a
// batch output line's response body) as the client stores it: the vectors
// in Content (see DecodeVectors), the model, and the prompt tokens. Every
// item must have an embedding of the same non-zero length with finite
// values; items are put in the order of their index fields (input order).
func ParseEmbeddings(body []byte) (CachedResponse, error) {
	return parseEmbeddings(body, -1)
}

// parseEmbeddings is ParseEmbeddings that also checks the number of
// vectors when want >= 0.
func parseEmbeddings(body []byte, want int) (CachedResponse, error) {
	var a embeddingsAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return CachedResponse{}, fmt.Errorf("malformed embeddings answer: %w", err)
	}
	if len(a.Data) == 0 {
		return CachedResponse{}, errors.New("embeddings answer has no data")
	}
	if want >= 0 && len(a.Data) != want {
		return CachedResponse{}, fmt.Errorf("embeddings answer has %d vectors for %d inputs", len(a.Data), want)
	}
	vs := make([][]float32, len(a.Data))
	dim := -1
	for i, d := range a.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= len(vs) || vs[at] != nil {
			return CachedResponse{}, fmt.Errorf("embeddings answer: item %d has index %d, out of place", i, at)
		}
		v, err := readVector(d.Embedding)
		if err != nil {
			return CachedResponse{}, fmt.Errorf("embeddings answer: item %d: %w", i, err)
		}
		if dim < 0 {
			dim = len(v)
		}
		if len(v) == 0 || len(v) != dim {
			return CachedResponse{}, fmt.Errorf("embeddings answer: item %d has %d dimensions, want %d", i, len(v), dim)
		}
		vs[at] = v
	}
	u := Usage{Prompt: a.Usage.PromptTokens}
	if u.Prompt == 0 {
		u.Prompt = a.Usage.TotalTokens
	}
	return CachedResponse{Content: EncodeVectors(vs), Model: a.Model, Usage: u}, nil
}

// readVector reads one embedding: an array of numbers or a base64 string.
func readVector(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b)%4 != 0 {
			return nil, errors.New("base64 embedding is not a whole number of float32s")
		}
		return floats(b)
	}
	var fs []float64
	if err := json.Unmarshal(raw, &fs); err != nil {
		return nil, fmt.Errorf("embedding is not an array of numbers: %w", err)
	}
	v := make([]float32, len(fs))
	for i, f := range fs {
		x := float32(f)
		if math.IsNaN(f) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("value %d is not a finite float32", i)
		}
		v[i] = x
	}
	return v, nil
}

// floats reads little-endian float32s, refusing NaN and infinities.
func floats(b []byte) ([]float32, error) {
	v := make([]float32, len(b)/4)
	for i := range v {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("value %d is not finite", i)
		}
		v[i] = x
	}
	return v, nil
}

// vectorsHeader starts the stored form of embeddings (see EncodeVectors).
const vectorsHeader = "ac3-vectors/1 f32le base64\n"

// EncodeVectors is how embeddings are stored in the cache, in a
// CachedResponse's Content: a header line, then one line per vector, the
// standard base64 of its little-endian float32s. It is a quarter of the
// size of the JSON an endpoint sends and keeps exactly the float32 values.
func EncodeVectors(vs [][]float32) string {
	var b strings.Builder
	b.WriteString(vectorsHeader)
	var buf []byte
	for _, v := range vs {
		buf = buf[:0]
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		b.WriteString(base64.StdEncoding.EncodeToString(buf))
		b.WriteByte('\n')
	}
	return b.String()
}

// DecodeVectors reads what EncodeVectors wrote. Every vector must have the
// same non-zero length and finite values.
func DecodeVectors(s string) ([][]float32, error) {
	rest, ok := strings.CutPrefix(s, vectorsHeader)
	if !ok {
		return nil, errors.New("decoding stored embeddings: not in the ac3-vectors/1 form")
	}
	var vs [][]float32
	for line := range strings.Lines(rest) {
		line = strings.TrimSuffix(line, "\n")
		b, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(b) == 0 || len(b)%4 != 0 {
			return nil, fmt.Errorf("decoding stored embeddings: vector %d is malformed", len(vs))
		}
		v, err := floats(b)
		if err != nil {
			return nil, fmt.Errorf("decoding stored embeddings: vector %d: %w", len(vs), err)
		}
		if len(vs) > 0 && len(v) != len(vs[0]) {
			return nil, fmt.Errorf("decoding stored embeddings: vector %d has %d dimensions, the first %d", len(vs), len(v), len(vs[0]))
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, errors.New("decoding stored embeddings: no vector")
	}
	return vs, nil
}

// BatchURL is the url of the batch input lines of the endpoint named
// name: EmbedURL for an endpoint bound to the embedder role, else the
// chat-completions url.
func (c *Client) BatchURL(name string) string {
	if ep, ok := c.endpoints[name]; ok && ep.embeds {
		return EmbedURL
	}
	return "/v1/chat/completions"
}

// ParseAnswer reads a batch output line's 200 body for the endpoint named
// name: ParseEmbeddings for an embedder's endpoint, else ParseCompletion.
func (c *Client) ParseAnswer(name string, body []byte) (CachedResponse, error) {
	if ep, ok := c.endpoints[name]; ok && ep.embeds {
		return ParseEmbeddings(body)
	}
	return ParseCompletion(body)
}

// prepareEmbed resolves an embeddings request: its key covers the model,
// the effective parameters (only their extra fields are sent) and the
// texts; its TPM charge and budget reservation are the texts' estimated
// tokens, with no completion.
func (c *Client) prepareEmbed(req Request, ep *endpoint, params Params) (*prepared, error) {
	cr := canonicalRequest{V: keyVersion, Model: ep.cfg.Model, Params: params, Embed: req.embed}
	key, err := cr.key()
	if err != nil {
		return nil, fmt.Errorf("hashing request: %w", err)
	}
	n := 0
	for _, s := range req.embed {
		n += c.opts.Estimate(s) + 1
	}
	return &prepared{ep: ep, params: params, key: key, promptTk: n, embed: req.embed}, nil
}

// pingEmbedder is Ping for the embedder role: one embeddings request for
// one short text; the result's Text gives the vector's length.
func (c *Client) pingEmbedder(ctx context.Context, role string) (PingResult, error) {
	resp, err := c.Call(ctx, Request{Role: role, Stage: "ping", NoCache: true, embed: []string{"ping"}})
	res := PingResult{Endpoint: resp.Endpoint, Model: resp.Model, Latency: resp.Latency, Usage: resp.Usage,
		CostUSD: resp.CostUSD, Attempts: resp.Attempts, Headers: resp.Headers}
	if err != nil {
		return res, err
	}
	vs, err := DecodeVectors(resp.Content)
	if err != nil {
		return res, err
	}
	res.Text = fmt.Sprintf("an embedding of %d dimensions", len(vs[0]))
	return res, nil
}
