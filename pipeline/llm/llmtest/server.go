package llmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server.
type Options struct {
	// Model is reported when a reply does not name one and the request has
	// no model. Default "test-model".
	Model string
	// Key, when set, is the only API key accepted; other requests get 401.
	Key string
	// Limit and Window make the server enforce its own rate limit: at most
	// Limit requests arriving in any Window (default one minute). Requests
	// over it get 429 and are counted in Violations.
	Limit  int
	Window time.Duration
	// Default answers requests no rule matched. Default: content "ok".
	Default Reply
	// Latency delays every answer (the default's or a rule's, after the
	// Reply's own Latency), as a real model takes time to answer; faults
	// are not delayed by it.
	Latency time.Duration
	// Chaos, when set, injects faults per request before any rule is
	// tried (see Chaos). SetChaos can change it later.
	Chaos *Chaos
	// Unenforced makes the server check the schemas requests send but pass
	// scripted replies through as they are, like a server that accepts
	// response_format without enforcing it: tests of how a parser handles
	// answers that break the schema use it.
	Unenforced bool
	// ArrivalLog, when set, receives one JSON line per request as it
	// arrives (see Arrival), for tests that read the log from a file or
	// share it with another process. Write errors are ignored.
	ArrivalLog io.Writer
	// Lean keeps in the call log (Calls) only what a call's timing and
	// outcome need: Header, Body and Request are left empty. A benchmark of
	// a hundred thousand calls sets it, so that the log, which keeps every
	// request, does not grow the test's heap by gigabytes and charge the
	// garbage collector's extra work to the code being measured.
	Lean bool
	// Batch configures the batch API (/v1/files, /v1/batches); SetBatch
	// can change it later.
	Batch BatchOptions
	// NoPrefixCache turns off the emulated prompt cache (see prefixcache.go):
	// answers then report no cached tokens.
	NoPrefixCache bool
	// CacheWindow is how many recent requests the prompt cache remembers
	// (default 2048).
	CacheWindow int
	// EmbedDim is the length of the vectors /v1/embeddings answers with
	// (default 64; see Embedding).
	EmbedDim int
}

// KeyHeader is the request header in which ac3's client sends its cache key
// (a hash of the request, nothing secret). The server logs it as Call.Key
// and uses it to recognise repeats of one request.
const KeyHeader = "X-Ac3-Request-Key"

// Message is a chat message as the server received it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is the decoded body of a chat-completions request.
type ChatRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Temperature    *float64        `json:"temperature"`
	TopP           *float64        `json:"top_p"`
	MaxTokens      *int            `json:"max_tokens"`
	MaxCompletion  *int            `json:"max_completion_tokens"`
	Seed           *int64          `json:"seed"`
	Stop           json.RawMessage `json:"stop"`
	ResponseFormat json.RawMessage `json:"response_format"`
	// Input is an embeddings request's input (a string or an array of
	// strings); see Inputs.
	Input json.RawMessage `json:"input"`
	// Fields holds every top-level field, for extras.
	Fields map[string]json.RawMessage `json:"-"`
}

// Last returns the content of the last message, or "".
func (r ChatRequest) Last() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// System returns the content of the first system message, or "".
func (r ChatRequest) System() string {
	for _, m := range r.Messages {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

// Nonce returns the id of the last opening tag <tag id="…"> in the last
// message, or "". ac3's prompts state the form of the answer, with its
// nonce, at the very end, after any material that might quote such a tag.
func (r ChatRequest) Nonce(tag string) string {
	last := r.Last()
	open := "<" + tag + ` id="`
	i := strings.LastIndex(last, open)
	if i < 0 {
		return ""
	}
	id, _, ok := strings.Cut(last[i+len(open):], `"`)
	if !ok {
		return ""
	}
	return id
}

// Usage is what a reply reports as token usage.
type Usage struct {
	Prompt, Completion, Cached, Reasoning int
}

// Reply is a successful answer.
type Reply struct {
	Content string
	// Reasoning is sent in ReasoningField (default "reasoning_content").
	Reasoning      string
	ReasoningField string
	// Usage defaults to len/4 estimates of the request and the content.
	Usage        *Usage
	Model        string
	FinishReason string
	Latency      time.Duration // wait before answering
	Headers      map[string]string
}

// FaultKind is a way to misbehave.
type FaultKind int

// The faults a Rule can inject.
const (
	NoFault   FaultKind = iota
	Status              // answer Fault.Status with an OpenAI-style error body
	Hang                // hold the request until the client gives up (or Fault.Latency)
	Reset               // close the TCP connection abruptly, sending nothing
	Truncated           // a 200 whose JSON body stops halfway
	Malformed           // a 200 with valid JSON that is not a chat completion (no choices)
	Garbled             // a well-formed completion whose content is Fault.Message (default: nonsense no parser accepts)
)

// garbledContent is what a Garbled fault answers when its Message is empty:
// text with none of the tags, JSON or labels a stage's parser looks for.
const garbledContent = "~~ garbled answer: the model rambled and produced nothing usable ~~"

// String names the fault kind, for logs and test messages.
func (k FaultKind) String() string {
	switch k {
	case NoFault:
		return "none"
	case Status:
		return "status"
	case Hang:
		return "hang"
	case Reset:
		return "reset"
	case Truncated:
		return "truncated"
	case Malformed:
		return "malformed"
	case Garbled:
		return "garbled"
	}
	return fmt.Sprintf("fault(%d)", int(k))
}

// Fault is a deliberate failure.
type Fault struct {
	Kind    FaultKind
	Status  int               // for Status: 429, 500, 503, 400, 401, 404, …
	Message string            // error message in the body
	Code    string            // error code in the body, e.g. "insufficient_quota"
	Headers map[string]string // e.g. Retry-After, retry-after-ms, x-ratelimit-*
	Latency time.Duration     // wait before failing; for Hang, the longest hold (default 1 min)
}

// Schedule decides whether a rule fires on its n-th match (1-based).
type Schedule func(n int) bool

// Always fires on every match.
func Always() Schedule { return func(int) bool { return true } }

// FirstN fires on the first n matches.
func FirstN(n int) Schedule { return func(i int) bool { return i <= n } }

// EveryK fires on matches k, 2k, 3k, ….
func EveryK(k int) Schedule { return func(i int) bool { return k > 0 && i%k == 0 } }

// Fraction fires on about p of the matches, decided by a hash of seed and the
// match number, so a sequential run is reproducible. Under concurrency the
// match number depends on arrival order; Chaos decides per request instead.
func Fraction(p float64, seed uint64) Schedule {
	return func(i int) bool {
		return unit(seed, fmt.Sprint(i)) < p
	}
}

// unit maps seed and s to a number in [0, 1) by hashing.
func unit(seed uint64, s string) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, s)
	return float64(h.Sum64()%1_000_000) / 1_000_000
}

// Chaos injects faults per request, deterministically: each arrival's fate
// is a seeded hash of the request's identity (the client's KeyHeader when
// sent, else a hash of the body) and of how many times that request has
// arrived before. The same request therefore meets the same faults on its
// first, second, … attempt in every run, whatever order concurrent requests
// arrive in, and a retry of a faulted request draws afresh.
type Chaos struct {
	Seed uint64
	// Faults share the unit interval in order: an arrival whose draw u
	// falls in [P1+…+Pk-1, P1+…+Pk) gets fault k; a draw past the sum gets
	// no fault, and the rules answer it.
	Faults []ChaosFault
	// MaxPerRequest caps how many arrivals of one request are faulted;
	// later arrivals are answered by the rules. 0 means no cap.
	MaxPerRequest int
	// Match limits chaos to some requests (nil: all).
	Match func(ChatRequest) bool
}

// ChaosFault is one fault of a Chaos and the share of arrivals it hits.
type ChaosFault struct {
	P     float64
	Fault Fault
	// Match, when set, limits this fault to some requests: an arrival it
	// does not match and whose draw falls in this fault's share gets no
	// fault, and the other faults keep their shares.
	Match func(ChatRequest) bool
}

// pick returns the fault for the nth (1-based) arrival of id, if any.
func (c *Chaos) pick(id string, nth int, req ChatRequest) (Fault, bool) {
	u := unit(c.Seed, fmt.Sprintf("%s/%d", id, nth))
	acc := 0.0
	for _, f := range c.Faults {
		acc += f.P
		if u < acc {
			if f.Match != nil && !f.Match(req) {
				return Fault{}, false
			}
			return f.Fault, true
		}
	}
	return Fault{}, false
}

// Rule scripts the answer to matching requests. Rules are tried in the order
// they were added; the first that matches and whose schedule fires answers.
// A rule with a Fault misbehaves; otherwise Func (if set) or Reply answers.
type Rule struct {
	Name           string
	Match          func(ChatRequest) bool // nil matches everything
	LastContains   string                 // the last message must contain this
	SystemContains string                 // the system message must contain this
	When           Schedule               // nil is Always
	Fault          Fault
	Reply          Reply
	Func           func(ChatRequest) Reply
	// Hold, when set, keeps a request the rule answers in flight until it
	// is closed (or the client hangs up), before any latency, reply or
	// fault: tests use it to order events without sleeping.
	Hold <-chan struct{}

	matched int
}

func (r *Rule) matches(req ChatRequest) bool {
	if r.Match != nil && !r.Match(req) {
		return false
	}
	if r.LastContains != "" && !strings.Contains(req.Last(), r.LastContains) {
		return false
	}
	if r.SystemContains != "" && !strings.Contains(req.System(), r.SystemContains) {
		return false
	}
	return true
}

// Call is one logged request.
type Call struct {
	Time    time.Time // arrival
	End     time.Time // when the answer (or failure) was complete; zero while in progress
	Path    string
	Header  http.Header
	Body    []byte
	Request ChatRequest
	// Key is the client's cache key from KeyHeader ("" when not sent).
	Key string
	// PromptHash is a hex SHA-256 of the model and messages: equal for
	// requests that ask the same thing, whatever their other parameters.
	PromptHash string
	// Nth counts the arrivals of this request so far, this one included
	// (requests are told apart by Key, or by the body when no key is sent).
	Nth    int
	Rule   string    // name of the rule that answered, "" for the default, "chaos" for a chaos fault
	Fault  FaultKind // fault injected, NoFault when answered normally
	Status int       // status sent (0 for a reset or hang cut short)
	// SchemaError says why the request was refused (a schema a strict
	// endpoint would reject) or why its scripted reply broke the schema the
	// request sent; "" when neither.
	SchemaError string
	// Batch is the id of the batch this request was a line of, "" for a
	// request sent online.
	Batch string
	// Cached is how many prompt tokens the emulated prompt cache served
	// (reported in usage unless the reply scripts its own usage).
	Cached int
	// Conn numbers the client connection the request came on, from 1 in
	// the order the server accepted them. A connection belongs to one
	// client process, but its number does not say which: one a killed
	// process opened can be accepted after the next process started (Door
	// tells).
	Conn uint64
	// Door is the number Door gave the address the request came to, 0 for
	// URL. A test that gives each client process a door of its own knows
	// whose every request was, even one the process wrote just before it
	// was killed on a connection the server accepted only afterwards.
	Door int
}

// connKey carries a connection's number in its requests' contexts, and
// doorKey the door it came through.
type (
	connKey struct{}
	doorKey struct{}
)

// Arrival is one line of Options.ArrivalLog.
type Arrival struct {
	Time       time.Time `json:"time"`
	Key        string    `json:"key,omitempty"`
	PromptHash string    `json:"prompt_hash"`
	Nth        int       `json:"nth"`
	Fault      string    `json:"fault,omitempty"`
}

// Server is the fake endpoint.
type Server struct {
	// URL is the base URL to configure a client with; it ends in /v1.
	URL string

	opts    Options
	srv     *httptest.Server
	handler http.Handler // what URL and every door serve
	closing chan struct{}

	mu         sync.Mutex
	rules      []*Rule
	chaos      *Chaos
	prefix     *prefixCache   // nil when Options.NoPrefixCache
	seen       map[string]int // arrivals per request identity
	faulted    map[string]int // chaos faults per request identity
	calls      []Call
	arrivals   []time.Time
	violations int
	inflight   int
	peak       int

	batchOpts BatchOptions
	files     map[string]*file
	batches   map[string]*batchJob
	order     []string // batch ids in creation order
	nextID    int

	conns atomic.Uint64  // connections accepted so far
	doors []*http.Server // opened by Door; guarded by mu
	// requests counts every HTTP request, of any path, refused or not.
	requests atomic.Int64
}

// TB is the part of testing.TB a Server needs; *testing.T and *testing.B
// satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
}

// New starts a Server and stops it when tb ends (Close may also be called
// directly).
func New(tb TB, opts Options) *Server {
	tb.Helper()
	if opts.Model == "" {
		opts.Model = "test-model"
	}
	if opts.Window <= 0 {
		opts.Window = time.Minute
	}
	if opts.Default.Content == "" {
		opts.Default.Content = "ok"
	}
	if opts.EmbedDim <= 0 {
		opts.EmbedDim = 64
	}
	s := &Server{opts: opts, closing: make(chan struct{}), chaos: opts.Chaos, seen: map[string]int{}, faulted: map[string]int{},
		batchOpts: opts.Batch, files: map[string]*file{}, batches: map[string]*batchJob{}}
	if !opts.NoPrefixCache {
		s.prefix = newPrefixCache(opts.CacheWindow)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handle)
	mux.HandleFunc("POST /chat/completions", s.handle)
	mux.HandleFunc("POST /v1/embeddings", s.handle)
	mux.HandleFunc("POST /embeddings", s.handle)
	s.routeBatch(mux)
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		mux.ServeHTTP(w, r)
	})
	s.srv = httptest.NewUnstartedServer(s.handler)
	s.srv.Config.ConnContext = s.connContext(0)
	s.srv.Start()
	s.URL = s.srv.URL + "/v1"
	tb.Cleanup(s.Close)
	return s
}

// connContext numbers each connection and records the door it came
// through.
func (s *Server) connContext(door int) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(context.WithValue(ctx, connKey{}, s.conns.Add(1)), doorKey{}, door)
	}
}

// Door opens another address served exactly as URL is, and returns its base
// URL (with /v1) and its number, which Call.Door carries for every request
// that comes through it. Close closes it too.
func (s *Server) Door() (url string, door int, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, fmt.Errorf("opening a door: %w", err)
	}
	s.mu.Lock()
	door = len(s.doors) + 1
	hs := &http.Server{Handler: s.handler, ConnContext: s.connContext(door)}
	s.doors = append(s.doors, hs)
	s.mu.Unlock()
	go func() { _ = hs.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/v1", door, nil
}

// Close releases hanging handlers and stops the server. It is safe to call
// more than once.
func (s *Server) Close() {
	select {
	case <-s.closing:
		return
	default:
	}
	close(s.closing)
	s.mu.Lock()
	doors := s.doors
	s.mu.Unlock()
	for _, hs := range doors {
		_ = hs.Close()
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Add appends rules.
func (s *Server) Add(rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range rules {
		r := rules[i]
		s.rules = append(s.rules, &r)
	}
}

// SetChaos replaces the server's chaos (nil turns it off). Counts of
// earlier arrivals are kept, so a request's next attempt draws as it would
// have.
func (s *Server) SetChaos(c *Chaos) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chaos = c
}

// Reply adds a rule answering every request whose last message contains
// substr with content.
func (s *Server) Reply(substr, content string) {
	s.Add(Rule{Name: "reply:" + substr, LastContains: substr, Reply: Reply{Content: content}})
}

// Fail adds a rule injecting f on every request the schedule picks.
func (s *Server) Fail(when Schedule, f Fault) {
	s.Add(Rule{Name: fmt.Sprintf("fault:%d/%d", f.Kind, f.Status), When: when, Fault: f})
}

// Calls returns a copy of the request log.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Requests reports how many HTTP requests reached the server: chat
// requests, the batch API's, and those of any other path, whether answered
// or refused. A test that must show nothing was sent checks it is 0.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Count reports how many chat requests arrived, online or as batch lines.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// Violations reports how many requests broke the server's own rate limit.
func (s *Server) Violations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.violations
}

// MaxInFlight reports the most requests the server was handling at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// MaxInWindow reports the largest number of requests that arrived within
// any half-open interval [t, t+d).
func (s *Server) MaxInWindow(d time.Duration) int {
	s.mu.Lock()
	ts := slices.Clone(s.arrivals)
	s.mu.Unlock()
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= d {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// Reset forgets the log, the arrivals, the per-request counts, the prompt
// cache and the rules' match counts (the rules and the chaos stay).
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls, s.arrivals, s.violations, s.peak = nil, nil, 0, s.inflight
	s.seen, s.faulted = map[string]int{}, map[string]int{}
	if s.prefix != nil {
		s.prefix = newPrefixCache(s.opts.CacheWindow)
	}
	for _, r := range s.rules {
		r.matched = 0
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.answer(w, r, body, r.Header.Get(KeyHeader), "")
}

// answer answers one chat request: one sent online (batch "") or one line
// of a batch. A batch line neither counts against the rate limit nor
// waits: latencies and holds do not apply, and a hang or reset comes back
// as status 0.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, body []byte, key, batch string) int {
	now := time.Now()
	var req ChatRequest
	_ = json.Unmarshal(body, &req)
	_ = json.Unmarshal(body, &req.Fields)

	id := key
	if id == "" {
		sum := sha256.Sum256(body)
		id = "body:" + hex.EncodeToString(sum[:])
	}
	ph := promptHash(req)

	s.mu.Lock()
	s.inflight++
	s.peak = max(s.peak, s.inflight)
	s.seen[id]++
	nth := s.seen[id]
	idx := len(s.calls)
	conn, _ := r.Context().Value(connKey{}).(uint64)
	door, _ := r.Context().Value(doorKey{}).(int)
	logged := Call{Time: now, Path: r.URL.Path, Key: key, PromptHash: ph, Nth: nth, Batch: batch, Conn: conn, Door: door}
	if !s.opts.Lean {
		logged.Header, logged.Body, logged.Request = r.Header.Clone(), body, req
	}
	s.calls = append(s.calls, logged)
	overLimit := false
	if batch == "" {
		s.arrivals = append(s.arrivals, now)
	}
	if s.opts.Limit > 0 && batch == "" {
		n := 0
		for i := len(s.arrivals) - 2; i >= 0 && now.Sub(s.arrivals[i]) < s.opts.Window; i-- {
			n++
		}
		if n >= s.opts.Limit {
			overLimit = true
			s.violations++
		}
	}
	var rule *Rule
	var chaos *Fault
	if c := s.chaos; !overLimit && c != nil && (c.Match == nil || c.Match(req)) &&
		(c.MaxPerRequest <= 0 || s.faulted[id] < c.MaxPerRequest) {
		if f, ok := c.pick(id, nth, req); ok {
			s.faulted[id]++
			chaos = &f
			rule = &Rule{Name: "chaos", Fault: f}
		}
	}
	if !overLimit && chaos == nil {
		for _, ru := range s.rules {
			if !ru.matches(req) {
				continue
			}
			ru.matched++
			if ru.When == nil || ru.When(ru.matched) {
				rule = ru
				break
			}
		}
	}
	if rule != nil {
		s.calls[idx].Rule = rule.Name
		s.calls[idx].Fault = rule.Fault.Kind
	}
	cached := 0
	if s.prefix != nil && !overLimit {
		// A request refused before any work is done leaves nothing cached.
		k := NoFault
		if rule != nil {
			k = rule.Fault.Kind
		}
		cached = s.prefix.lookup(req, k == NoFault || k == Garbled || k == Truncated)
		s.calls[idx].Cached = cached
	}
	if w := s.opts.ArrivalLog; w != nil {
		a := Arrival{Time: now, Key: key, PromptHash: ph, Nth: nth}
		if rule != nil && rule.Fault.Kind != NoFault {
			a.Fault = rule.Fault.Kind.String()
		}
		b, _ := json.Marshal(a)
		_, _ = w.Write(append(b, '\n')) // under s.mu: lines never interleave
	}
	s.mu.Unlock()

	status, schemaErr := s.respond(w, r, req, rule, overLimit, batch != "", cached)
	s.mu.Lock()
	s.calls[idx].Status = status
	s.calls[idx].SchemaError = schemaErr
	s.calls[idx].End = time.Now()
	s.inflight--
	s.mu.Unlock()
	return status
}

// promptHash hashes what a request asks: the model and the messages.
func promptHash(req ChatRequest) string {
	b, _ := json.Marshal(struct {
		Model    string    `json:"model"`
		Messages []Message `json:"messages"`
	}{req.Model, req.Messages})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// respond answers one request; it returns the status sent and, when the
// request's schema or the reply's fit to it was wrong, why.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, req ChatRequest, rule *Rule, overLimit, batch bool, cached int) (int, string) {
	// A batch line is answered when the batch completes: no latency, no hold.
	wait := s.wait
	if batch {
		wait = func(*http.Request, time.Duration) bool { return true }
	}
	if s.opts.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.Key {
		return writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_api_key", nil), ""
	}
	if overLimit {
		return writeError(w, http.StatusTooManyRequests, "Rate limit reached for requests (test server).", "rate_limit_exceeded", nil), ""
	}
	// A strict endpoint refuses a schema it cannot enforce before it
	// generates anything.
	schema, hasSchema := req.Schema()
	if hasSchema {
		err := CheckStrict(schema.Schema)
		if err == nil && !schema.Strict {
			err = fmt.Errorf("strict is not true (the test server, like ac3, only uses strict schemas)")
		}
		if err == nil && !schemaName.MatchString(schema.Name) {
			err = fmt.Errorf("name %q must match %s", schema.Name, schemaName)
		}
		if err != nil {
			msg := fmt.Sprintf("Invalid schema for response_format '%s': %v", schema.Name, err)
			return writeError(w, http.StatusBadRequest, msg, "invalid_request_error", nil), msg
		}
	}
	status, reply, ok := s.fault(w, r, req, rule, batch, wait, cached)
	if !ok {
		return status, ""
	}
	// A server that enforces the schema cannot answer outside it: a
	// scripted reply that does is a mistake in the test, reported as a
	// 400 the client does not retry and logged in Call.SchemaError.
	if hasSchema && !s.opts.Unenforced {
		if err := Conforms(schema.Schema, reply.Content); err != nil {
			msg := fmt.Sprintf("test server: the scripted reply breaks the request's schema %q: %v", schema.Name, err)
			return writeError(w, http.StatusBadRequest, msg, "scripted_reply_breaks_schema", nil), msg
		}
	}
	if !wait(r, reply.Latency+s.opts.Latency) {
		return 0, ""
	}
	for k, v := range reply.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	if isEmbed(r) {
		_, _ = w.Write(embeddings(req, reply, s.opts.Model, s.opts.EmbedDim, 0))
		return http.StatusOK, ""
	}
	_, _ = w.Write(completion(req, reply, s.opts.Model, cached))
	return http.StatusOK, ""
}

// schemaName is what OpenAI allows as a json_schema name.
var schemaName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// fault injects rule's fault, if any, and reports the status sent and
// false; otherwise it returns the reply to send and true.
func (s *Server) fault(w http.ResponseWriter, r *http.Request, req ChatRequest, rule *Rule, batch bool, wait func(*http.Request, time.Duration) bool, cached int) (int, Reply, bool) {
	if rule != nil && rule.Hold != nil && !batch {
		select {
		case <-rule.Hold:
		case <-r.Context().Done():
			return 0, Reply{}, false
		case <-s.closing:
			return 0, Reply{}, false
		}
	}
	if rule != nil && rule.Fault.Kind != NoFault {
		f := rule.Fault
		if f.Kind != Hang && !wait(r, f.Latency) {
			return 0, Reply{}, false
		}
		switch f.Kind {
		case Status:
			return writeError(w, f.Status, f.Message, f.Code, f.Headers), Reply{}, false
		case Hang:
			if batch {
				return 0, Reply{}, false
			}
			limit := f.Latency
			if limit <= 0 {
				limit = time.Minute
			}
			s.wait(r, limit)
			return 0, Reply{}, false
		case Reset:
			if batch {
				return 0, Reply{}, false
			}
			hj, ok := w.(http.Hijacker)
			if !ok {
				return 0, Reply{}, false
			}
			conn, _, err := hj.Hijack()
			if err != nil {
				return 0, Reply{}, false
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // RST instead of FIN
			}
			_ = conn.Close()
			return 0, Reply{}, false
		case Truncated:
			b := completion(req, Reply{Content: "this answer is cut short"}, s.opts.Model, cached)
			if isEmbed(r) {
				b = embeddings(req, Reply{}, s.opts.Model, s.opts.EmbedDim, 0)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(b[:len(b)/2])
			return http.StatusOK, Reply{}, false
		case Malformed:
			w.Header().Set("Content-Type", "application/json")
			if isEmbed(r) {
				_, _ = w.Write([]byte(`{"object":"list","model":"` + s.opts.Model + `","data":[]}`))
				return http.StatusOK, Reply{}, false
			}
			_, _ = w.Write([]byte(`{"id":"chatcmpl-test","object":"chat.completion","model":"` + s.opts.Model + `","choices":[]}`))
			return http.StatusOK, Reply{}, false
		case Garbled:
			content := f.Message
			if content == "" {
				content = garbledContent
			}
			w.Header().Set("Content-Type", "application/json")
			if isEmbed(r) {
				// One vector short: a client must not take it.
				_, _ = w.Write(embeddings(req, Reply{}, s.opts.Model, s.opts.EmbedDim, 1))
				return http.StatusOK, Reply{}, false
			}
			_, _ = w.Write(completion(req, Reply{Content: content}, s.opts.Model, cached))
			return http.StatusOK, Reply{}, false
		}
	}
	reply := s.opts.Default
	if rule != nil {
		reply = rule.Reply
		if rule.Func != nil {
			reply = rule.Func(req)
		}
	}
	return 0, reply, true
}

// wait sleeps d unless the client leaves or the server closes first. It
// reports whether the full wait elapsed.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closing:
		return false
	}
}

func writeError(w http.ResponseWriter, status int, msg, code string, headers map[string]string) int {
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
	_, _ = w.Write(b)
	return status
}

// completion is the body of a successful answer. Usage, unless rep scripts
// its own, estimates the request and the content at 4 bytes a token and
// reports cached of the prompt tokens as served from the prompt cache.
func completion(req ChatRequest, rep Reply, model string, cached int) []byte {
	if rep.Model != "" {
		model = rep.Model
	} else if req.Model != "" {
		model = req.Model
	}
	u := rep.Usage
	if u == nil {
		n := 0
		for _, m := range req.Messages {
			n += len(m.Content)/4 + 4
		}
		u = &Usage{Prompt: n + 3, Completion: (len(rep.Content)+len(rep.Reasoning))/4 + 1, Cached: cached}
		u.Cached = min(u.Cached, u.Prompt)
	}
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	if rep.Reasoning != "" {
		f := rep.ReasoningField
		if f == "" {
			f = "reasoning_content"
		}
		msg[f] = rep.Reasoning
	}
	finish := rep.FinishReason
	if finish == "" {
		finish = "stop"
	}
	b, _ := json.Marshal(map[string]any{
		"id":      "chatcmpl-test",
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens":             u.Prompt,
			"completion_tokens":         u.Completion,
			"total_tokens":              u.Prompt + u.Completion,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached},
			"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		},
	})
	return b
}
