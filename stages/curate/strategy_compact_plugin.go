package curate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/curate/curated"
)

// PluginSchema names the JSON a plug-in compactor reads and writes; it is
// sent in every request and changes if the shape ever does.
const PluginSchema = "ac3.compact.v1"

// Defaults of a plug-in's limits.
const (
	DefaultPluginTimeout = 2 * time.Minute
	DefaultPluginRetries = 2
	// maxPluginOutput caps what a plug-in may answer.
	maxPluginOutput = 64 << 20
	// stderrTail is how much of a failed command's stderr an error quotes.
	stderrTail = 2048
)

// Plugin is a plug-in compactor, plugin=NAME: a user's program that reads
// the history as JSON (PluginRequest) and answers the compacted history as
// JSON (PluginResponse). It is either a command, run once per compaction
// with the request on stdin and the answer read from stdout, or an HTTP
// endpoint the request is POSTed to. This is how LLMLingua-2, or any other
// compressor that ac3 does not implement, runs as a strategy.
type Plugin struct {
	// Command is the program and its arguments (no shell); Dir is where it
	// runs ("" : the current directory).
	Command []string
	Dir     string
	// URL is the endpoint's address; exactly one of Command and URL is set.
	URL string
	// Timeout bounds one call (DefaultPluginTimeout when 0).
	Timeout time.Duration
	// Retries is how many more times an HTTP call is sent after a failed
	// connection, a timeout, a 408, 429 or 5xx (DefaultPluginRetries when
	// 0; negative: none). Commands are not retried.
	Retries int
	// Settings are passed to the plug-in in every request (its budget, its
	// model); they are part of the plug-in's identity.
	Settings map[string]any
	// Version is the user's label for the plug-in's own version: change it
	// when the program changes, so its old answers are not reused.
	Version string
}

// PluginMessage is one message of a plug-in's request or answer.
type PluginMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// PluginRequest is what a plug-in receives: H^t, the history before turn
// t, to compact. System is the conversation's system message, which ac3
// keeps at the head of the context itself (for reference; do not return
// it). Conversation and Turn say where the history comes from.
type PluginRequest struct {
	Schema       string          `json:"schema"`
	Plugin       string          `json:"plugin"`
	Settings     map[string]any  `json:"settings,omitempty"`
	Conversation string          `json:"conversation"`
	Turn         int             `json:"turn"`
	System       string          `json:"system,omitempty"`
	Messages     []PluginMessage `json:"messages"`
}

// PluginResponse is a plug-in's answer: exactly one of Messages (the
// compacted history, roles user or assistant; empty drops the history),
// Text (shorthand for one assistant message, the form LLM summaries and
// LLMLingua-2's compressed prompt take in the reference code) and Error
// (the plug-in could not compact this history: the turn fails with it).
// Notes is free-form and ignored. Any other field is an error, so a typo
// is not read as an empty answer.
type PluginResponse struct {
	Messages []PluginMessage `json:"messages"`
	Text     *string         `json:"text"`
	Error    string          `json:"error"`
	Notes    json.RawMessage `json:"notes"`
}

// PluginError is a plug-in call that failed for this history only (a
// timeout, a non-zero exit, an HTTP error after its retries, an answer
// that is not PluginResponse): the turn fails, the run goes on.
type PluginError struct {
	Plugin string
	Err    error
	Raw    string // the answer or stderr, for the failed unit
}

func (e *PluginError) Error() string { return fmt.Sprintf("plug-in %s: %v", e.Plugin, e.Err) }

func (e *PluginError) Unwrap() error { return e.Err }

// ParsePluginResponse reads a plug-in's answer into the messages of the
// compacted history. Errors quote the start of the answer.
func ParsePluginResponse(b []byte) ([]conv.Message, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r PluginResponse
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("the answer is not a %s JSON object (%v): %s", PluginSchema, err, excerpt(b))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("the answer has more after its JSON object: %s", excerpt(b))
	}
	set := 0
	if r.Messages != nil {
		set++
	}
	if r.Text != nil {
		set++
	}
	if r.Error != "" {
		set++
	}
	switch {
	case set != 1:
		return nil, fmt.Errorf("the answer must have exactly one of \"messages\", \"text\" and \"error\" (it has %d): %s", set, excerpt(b))
	case r.Error != "":
		return nil, fmt.Errorf("the plug-in reported: %s", r.Error)
	case r.Text != nil:
		if strings.TrimSpace(*r.Text) == "" {
			return nil, nil
		}
		return []conv.Message{{Role: conv.Assistant, Content: *r.Text}}, nil
	}
	out := make([]conv.Message, 0, len(r.Messages))
	for i, m := range r.Messages {
		switch conv.Role(m.Role) {
		case conv.User, conv.Assistant:
		default:
			return nil, fmt.Errorf("message %d of the answer has role %q; want user or assistant", i+1, m.Role)
		}
		out = append(out, conv.Message{Role: conv.Role(m.Role), Content: m.Content})
	}
	return out, nil
}

// excerpt quotes the start of b for an error message.
func excerpt(b []byte) string {
	const n = 200
	s := string(b)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strconv.Quote(s)
}

// PluginCompactor is plugin=NAME.
type PluginCompactor struct {
	name, plugin string
	p            Plugin
	identity     string // what decides the plug-in's answers, besides the history
	version      string
	cache        llm.Cache
	hc           *http.Client
}

func newPluginCompactor(name, plugin string, p Plugin, cache llm.Cache) (*PluginCompactor, error) {
	switch {
	case (len(p.Command) == 0) == (p.URL == ""):
		return nil, errors.New("a plug-in needs exactly one of command and url")
	case len(p.Command) > 0 && p.Command[0] == "":
		return nil, errors.New("the plug-in's command has an empty program name")
	case p.Timeout < 0:
		return nil, fmt.Errorf("timeout %s: want a positive duration", p.Timeout)
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultPluginTimeout
	}
	switch {
	case p.Retries == 0:
		p.Retries = DefaultPluginRetries
	case p.Retries < 0:
		p.Retries = 0
	}
	id, err := json.Marshal(struct {
		Command  []string       `json:"command,omitempty"`
		URL      string         `json:"url,omitempty"`
		Version  string         `json:"version,omitempty"`
		Settings map[string]any `json:"settings,omitempty"`
	}{p.Command, p.URL, p.Version, p.Settings})
	if err != nil {
		return nil, fmt.Errorf("encoding the plug-in's settings: %w", err)
	}
	h := sha256.Sum256(id)
	s := &PluginCompactor{name: name, plugin: plugin, p: p, identity: string(id), cache: cache,
		version: "plugin1;" + hex.EncodeToString(h[:6]), hc: &http.Client{}}
	return s, nil
}

// Name returns the LIST item, e.g. "plugin=lingua".
func (s *PluginCompactor) Name() string { return s.name }

// Version hashes the plug-in's command or URL, its version label and its
// settings; timeouts and retries do not change answers and are left out.
func (s *PluginCompactor) Version() string { return s.version }

// Contexts builds the plug-in's context for each turn t >= from.
func (s *PluginCompactor) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	return compactContexts(ctx, s, c, from, ws, nil)
}

func (s *PluginCompactor) compacted(ctx context.Context, c *conv.Conversation, sel []conv.Turn, ws *Workspace) ([]compactedTurn, error) {
	out := make([]compactedTurn, 0, len(sel))
	for _, t := range sel {
		ct := compactedTurn{turn: t, info: curated.Info{Operator: s.name, Action: ActionCompact}}
		k := memoKey{kind: "plugin", version: s.version, n: t.User}
		v, ok := ws.recall(k)
		if !ok {
			msgs, err := s.Compact(ctx, c, t)
			if err != nil {
				var pe *PluginError
				if errors.As(err, &pe) {
					return out, &TurnError{Turn: t.Index, Raw: pe.Raw, Err: err}
				}
				return out, err
			}
			v = msgs
			ws.remember(k, v)
		}
		for _, m := range v.([]conv.Message) {
			ct.parts = append(ct.parts, curated.TextPart(m.Role, m.Content))
		}
		out = append(out, ct)
	}
	return out, nil
}

// Compact asks the plug-in for C(H^t), or the run's cache when it answered
// the same history before. A *PluginError fails the turn; other errors
// (a cancelled run, a broken cache, a program that cannot be started)
// stop the run.
func (s *PluginCompactor) Compact(ctx context.Context, c *conv.Conversation, t conv.Turn) ([]conv.Message, error) {
	h := history(c, t)
	req := PluginRequest{Schema: PluginSchema, Plugin: s.plugin, Settings: s.p.Settings, Conversation: c.ID, Turn: t.Index, System: c.System,
		Messages: make([]PluginMessage, len(h))}
	for i, m := range h {
		req.Messages[i] = PluginMessage{Role: string(m.Role), Content: m.Content}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request to plug-in %s: %w", s.plugin, err)
	}
	key := s.cacheKey(req)
	if s.cache != nil {
		cr, ok, err := s.cache.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("reading plug-in %s's cached answer: %w", s.plugin, err)
		}
		if ok {
			if msgs, err := ParsePluginResponse([]byte(cr.Content)); err == nil {
				return msgs, nil
			}
		}
	}
	var raw []byte
	if s.p.URL != "" {
		raw, err = s.post(ctx, body)
	} else {
		raw, err = s.run(ctx, body)
	}
	if err != nil {
		return nil, err
	}
	msgs, err := ParsePluginResponse(raw)
	if err != nil {
		return nil, &PluginError{Plugin: s.plugin, Err: err, Raw: string(raw)}
	}
	if s.cache != nil {
		if err := s.cache.Put(ctx, key, llm.CachedResponse{Content: string(raw), Model: "plugin:" + s.plugin, CreatedAt: time.Now().UTC()}); err != nil {
			return nil, fmt.Errorf("storing plug-in %s's answer: %w", s.plugin, err)
		}
	}
	return msgs, nil
}

// cacheKey is the run-cache key of a request: the plug-in's identity and
// what it is asked (not the conversation's id or the turn's number, so one
// history is compacted once however many conversations share it).
func (s *PluginCompactor) cacheKey(req PluginRequest) string {
	h := sha256.New()
	b, _ := json.Marshal(struct {
		System   string          `json:"system,omitempty"`
		Messages []PluginMessage `json:"messages"`
	}{req.System, req.Messages})
	fmt.Fprintf(h, "ac3/compact-plugin/v1\n%d:%s\n", len(s.identity), s.identity)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// run runs the command once with body on stdin.
func (s *PluginCompactor) run(ctx context.Context, body []byte) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, s.p.Timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, s.p.Command[0], s.p.Command[1:]...)
	cmd.Dir = s.p.Dir
	cmd.Stdin = bytes.NewReader(body)
	cmd.WaitDelay = 5 * time.Second
	stdout := &capBuffer{limit: maxPluginOutput}
	stderr := &tailBuffer{limit: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	what := strings.Join(s.p.Command, " ")
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case cctx.Err() != nil:
		return nil, &PluginError{Plugin: s.plugin, Err: fmt.Errorf("%s: timed out after %s%s", what, s.p.Timeout, stderr.note()), Raw: stderr.String()}
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, &PluginError{Plugin: s.plugin, Err: fmt.Errorf("%s: exit status %d%s", what, ee.ExitCode(), stderr.note()), Raw: stderr.String()}
		}
		return nil, fmt.Errorf("running plug-in %s (%s): %w", s.plugin, what, err)
	case stdout.over:
		return nil, &PluginError{Plugin: s.plugin, Err: fmt.Errorf("%s: answer longer than %d bytes", what, maxPluginOutput)}
	}
	return stdout.Bytes(), nil
}

// post sends body to the endpoint, retrying what may pass on a second try.
func (s *PluginCompactor) post(ctx context.Context, body []byte) ([]byte, error) {
	var last error
	for attempt := 0; attempt <= s.p.Retries; attempt++ {
		if attempt > 0 {
			if err := sleepCtx(ctx, backoffOf(attempt, last)); err != nil {
				return nil, err
			}
		}
		raw, retry, err := s.postOnce(ctx, body)
		if err == nil || !retry {
			return raw, err
		}
		last = err
	}
	var pe *PluginError
	if errors.As(last, &pe) {
		pe.Err = fmt.Errorf("%w (after %d tries)", pe.Err, s.p.Retries+1)
	}
	return nil, last
}

// retryAfter carries a server's Retry-After into the backoff.
type retryAfter struct {
	error
	wait time.Duration
}

func backoffOf(attempt int, last error) time.Duration {
	var ra *retryAfter
	if errors.As(last, &ra) && ra.wait > 0 {
		return min(ra.wait, time.Minute)
	}
	return time.Duration(250<<min(attempt-1, 6)) * time.Millisecond
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *PluginCompactor) postOnce(ctx context.Context, body []byte) (raw []byte, retry bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, s.p.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, s.p.URL, bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("plug-in %s: building the request to %s: %w", s.plugin, s.p.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	switch {
	case ctx.Err() != nil:
		return nil, false, ctx.Err()
	case cctx.Err() != nil:
		return nil, true, &PluginError{Plugin: s.plugin, Err: fmt.Errorf("POST %s: timed out after %s", s.p.URL, s.p.Timeout)}
	case err != nil:
		return nil, true, &PluginError{Plugin: s.plugin, Err: fmt.Errorf("POST %s: %w", s.p.URL, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxPluginOutput+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, true, &PluginError{Plugin: s.plugin, Err: fmt.Errorf("POST %s: reading the answer: %w", s.p.URL, err)}
	}
	if len(b) > maxPluginOutput {
		return nil, false, &PluginError{Plugin: s.plugin, Err: fmt.Errorf("POST %s: answer longer than %d bytes", s.p.URL, maxPluginOutput)}
	}
	if resp.StatusCode/100 == 2 {
		return b, false, nil
	}
	pe := &PluginError{Plugin: s.plugin, Err: fmt.Errorf("POST %s: %s: %s", s.p.URL, resp.Status, excerpt(b)), Raw: string(b)}
	switch c := resp.StatusCode; {
	case c == http.StatusTooManyRequests || c == http.StatusRequestTimeout || c >= 500:
		var wait time.Duration
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			wait = time.Duration(secs) * time.Second
		}
		return nil, true, &retryAfter{error: pe, wait: wait}
	}
	return nil, false, pe
}

// Unwrap lets errors.As find the *PluginError inside.
func (r *retryAfter) Unwrap() error { return r.error }

// capBuffer keeps at most limit bytes and notes whether more came.
type capBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// tailBuffer keeps the last limit bytes written.
type tailBuffer struct {
	buf   []byte
	limit int
	cut   bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.limit {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.limit:]...)
		b.cut = true
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return string(b.buf) }

// note is ", stderr: …" with the tail of stderr, or "" when it was empty.
func (b *tailBuffer) note() string {
	s := strings.TrimSpace(string(b.buf))
	if s == "" {
		return ""
	}
	if b.cut {
		s = "…" + s
	}
	return "; stderr (end): " + strconv.Quote(s)
}
