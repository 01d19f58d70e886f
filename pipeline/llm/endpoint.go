package llm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ac3/ac3/pipeline/llm/parse"
)

// Secret holds an API key. It prints, formats and marshals as "[redacted]" so
// a key cannot reach a log line, an error, a record or a report by accident;
// the client reads the value with string(s) only when it builds a request.
type Secret string

const redacted = "[redacted]"

// String returns "[redacted]" (or "" when no key is set).
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString returns the same as String so %#v does not reveal the key.
func (s Secret) GoString() string { return `"` + s.String() + `"` }

// MarshalText returns the redacted form; a Secret never serialises.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// JSONMode says what an endpoint supports for JSON answers.
type JSONMode string

// The JSON modes. With JSONOff the client never sends response_format and
// relies on the prompt and the parser; with JSONObject it asks for any JSON
// object; with JSONSchema it sends the request's schema (strict structured
// output) and falls back to a JSON object when the request has none.
const (
	JSONOff    JSONMode = ""
	JSONObject JSONMode = "json_object"
	JSONSchema JSONMode = "json_schema"
)

// Params are the sampling parameters of a request. A nil pointer or empty
// value means "not set": the server's default applies unless a lower layer
// (endpoint defaults, then role overrides, then the request) sets it.
type Params struct {
	Temperature     *float64       `json:"temperature,omitempty"`
	TopP            *float64       `json:"top_p,omitempty"`
	MaxTokens       *int           `json:"max_tokens,omitempty"`
	Seed            *int64         `json:"seed,omitempty"`
	Stop            []string       `json:"stop,omitempty"`
	ReasoningEffort string         `json:"reasoning_effort,omitempty"`
	Extra           map[string]any `json:"extra,omitempty"` // extra top-level JSON fields, sent as is
}

// Merge returns p with every field that over sets replaced by over's value.
// Extra maps are merged key by key, over winning.
func (p Params) Merge(over Params) Params {
	out := p
	if over.Temperature != nil {
		out.Temperature = over.Temperature
	}
	if over.TopP != nil {
		out.TopP = over.TopP
	}
	if over.MaxTokens != nil {
		out.MaxTokens = over.MaxTokens
	}
	if over.Seed != nil {
		out.Seed = over.Seed
	}
	if over.Stop != nil {
		out.Stop = slices.Clone(over.Stop)
	}
	if over.ReasoningEffort != "" {
		out.ReasoningEffort = over.ReasoningEffort
	}
	if len(p.Extra)+len(over.Extra) > 0 {
		out.Extra = make(map[string]any, len(p.Extra)+len(over.Extra))
		maps.Copy(out.Extra, p.Extra)
		maps.Copy(out.Extra, over.Extra)
	}
	return out
}

// Limits bound the traffic to one endpoint. They are shared by every role and
// stage that uses the endpoint. Zero means unlimited for RPM and TPM; the
// other fields have the defaults given.
type Limits struct {
	// Concurrency is the most requests in flight (default 8). The client
	// lowers its own limit below it when the server signals overload and
	// the signals ease as it slows down, and raises it back additively.
	Concurrency int
	// MinConcurrency is the floor of that adaptive limit (default a quarter
	// of Concurrency, at least 1), so that rate-limit answers unrelated to
	// our load cannot throttle a run to one request at a time.
	MinConcurrency int
	RPM            int // requests per minute
	TPM            int // tokens per minute (prompt + completion)
	// Patience is how long one request keeps waiting and retrying while the
	// server answers 429 (or 503 with Retry-After), honouring Retry-After,
	// retry-after-ms and x-ratelimit-reset-* (default 30 minutes). Rate
	// limits never use up MaxAttempts: while the run goes on they delay a
	// unit, and only after Patience do they fail it. Ctrl-C (Options.Stop)
	// and the budget still end the wait at once.
	Patience time.Duration
	// Unreachable is how long the endpoint may stay unreachable — its host
	// does not resolve, connections are refused, TLS fails — with no
	// answer before every call to it fails with an *UnreachableError
	// (default 60s). Until then such failures are retried with backoff,
	// without using up MaxAttempts. Timeouts, resets, 5xx and 429 are not
	// unreachability: MaxAttempts and Patience bound them.
	Unreachable time.Duration
}

// DefaultPatience is Limits.Patience when none is set.
const DefaultPatience = 30 * time.Minute

// DefaultUnreachable is Limits.Unreachable when none is set: long enough
// for a local server to restart, short enough that a wrong URL is known
// within a minute.
const DefaultUnreachable = 60 * time.Second

// Price is what an endpoint charges, in US dollars per million tokens.
// CachedInput applies to prompt tokens the server reports as cached; when it
// is zero, cached tokens are charged at Input.
//
// Batch is the share of these prices a batch request pays (see ModeBatch):
// 0 means DefaultBatchShare, half, as OpenAI and the providers that copy its
// batch API charge.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
	Batch       float64 `json:"batch,omitempty"`
}

// DefaultBatchShare is Price.Batch when none is set.
const DefaultBatchShare = 0.5

// ForBatch returns the price a batch request pays: every rate times the
// batch share.
func (p Price) ForBatch() Price {
	f := p.Batch
	if f <= 0 {
		f = DefaultBatchShare
	}
	return Price{Input: p.Input * f, CachedInput: p.CachedInput * f, Output: p.Output * f, Batch: 1}
}

// Endpoint is one OpenAI-compatible chat-completions server and model.
//
// Only Name, BaseURL and Model are required. APIKey is the resolved secret.
// The key is part of no cache key, record or error text, and the base URL
// of none but the *UnreachableError that stops a run, which shows it
// without credentials or query.
type Endpoint struct {
	Name    string
	BaseURL string // e.g. https://api.openai.com/v1, http://localhost:8000/v1
	APIKey  Secret
	// APIKeyEnv is the variable APIKey was read from. An endpoint that
	// names one needs its key: with APIKey empty nothing is sent to it
	// (see CheckKey). An endpoint that names none needs no key, as a local
	// vLLM, llama.cpp or Ollama server usually does, and its requests
	// carry none unless APIKey is set.
	APIKeyEnv string
	// APIKeyFrom says where APIKeyEnv was set (e.g. "config run.yaml:
	// line 9: endpoints.openai.api_key_env"), for the *KeyError.
	APIKeyFrom string
	// APIKeyHeader sends the key in this header instead of
	// "Authorization: Bearer" (Azure uses "api-key").
	APIKeyHeader string
	Headers      map[string]string // extra, non-secret request headers
	Query        map[string]string // extra query parameters (Azure: api-version)
	Model        string
	Params       Params // defaults for every request to this endpoint
	// MaxTokensField is the JSON name for Params.MaxTokens: "max_tokens"
	// (default, understood by most servers) or "max_completion_tokens"
	// (required by OpenAI reasoning models).
	MaxTokensField string
	Limits         Limits
	Price          Price
	Timeout        time.Duration // per attempt; default 2 minutes
	// MaxAttempts caps the attempts of one call that fail for reasons
	// other than rate limits (5xx, timeouts, resets, malformed bodies),
	// the first included; default 6. Rate-limit answers are bounded by
	// Limits.Patience instead.
	MaxAttempts int
	JSONMode    JSONMode
	// Kind is the kind of server (see Kinds); it decides the default Output.
	Kind string
	// Output is how stages ask this model for their answers: parse.Tags
	// (nonce-tagged sections, any server) or parse.JSONSchema (a strict
	// schema in response_format, enforced by the server while decoding).
	// Empty: DefaultOutput(Kind).
	Output parse.Output
	// BreakerThreshold consecutive failed attempts open the circuit breaker
	// (default 10); it stays open for BreakerCooldown (default 30s).
	BreakerThreshold int
	BreakerCooldown  time.Duration
	// Mode is ModeBatch when the requests for this endpoint go through
	// the batch API instead of being sent one by one (a role can override
	// it).
	Mode Mode
}

// Mode says how requests reach an endpoint.
type Mode string

// The modes. Online sends each request as it comes; Batch defers it to a
// batch file submitted later (see Deferrer).
const (
	ModeOnline Mode = ""
	ModeBatch  Mode = "batch"
)

// String describes the endpoint without its key or URL.
func (e Endpoint) String() string { return "endpoint " + e.Name + " (" + e.Model + ")" }

// GoString is String, so %#v cannot print the key.
func (e Endpoint) GoString() string { return e.String() }

func (e Endpoint) withDefaults() Endpoint {
	if e.Limits.Concurrency <= 0 {
		e.Limits.Concurrency = 8
	}
	if e.Limits.MinConcurrency <= 0 {
		e.Limits.MinConcurrency = defaultMinConcurrency(e.Limits.Concurrency)
	}
	e.Limits.MinConcurrency = min(e.Limits.MinConcurrency, e.Limits.Concurrency)
	if e.Limits.Patience <= 0 {
		e.Limits.Patience = DefaultPatience
	}
	if e.Limits.Unreachable <= 0 {
		e.Limits.Unreachable = DefaultUnreachable
	}
	if e.Timeout <= 0 {
		e.Timeout = 2 * time.Minute
	}
	if e.MaxAttempts <= 0 {
		e.MaxAttempts = 6
	}
	if e.BreakerThreshold <= 0 {
		e.BreakerThreshold = 10
	}
	if e.BreakerCooldown <= 0 {
		e.BreakerCooldown = 30 * time.Second
	}
	if e.MaxTokensField == "" {
		e.MaxTokensField = "max_tokens"
	}
	if e.Output == "" {
		e.Output = DefaultOutput(e.Kind)
	}
	return e
}

// KeyError says that an endpoint names the variable its API key is read
// from (Endpoint.APIKeyEnv) and that the variable is unset or empty.
// Nothing is sent to such an endpoint: without its key a request would be
// refused, or served as an anonymous caller's. From Options.CheckKeys and
// Endpoint.CheckKey it is a plain error (the command cannot start); every
// call to the endpoint returns it as a fatal one (errors.Is ErrFatal).
type KeyError struct {
	Endpoint string // the endpoint's name
	Var      string // the variable that is unset or empty
	From     string // where the variable was named (Endpoint.APIKeyFrom); may be empty
}

func (e *KeyError) Error() string {
	if e.From != "" {
		return fmt.Sprintf("%s: %s is not set or is empty, so nothing is sent; export it, or remove api_key_env if the server needs no key", e.From, e.Var)
	}
	return fmt.Sprintf("endpoint %s: its API key variable %s is not set or is empty, so nothing is sent", e.Endpoint, e.Var)
}

// fatalKeyError is a *KeyError met by a call: fatal, so the run stops.
type fatalKeyError struct{ *KeyError }

func (e fatalKeyError) Unwrap() []error { return []error{ErrFatal, e.KeyError} }

// CheckKey returns a *KeyError when the endpoint names the variable its key
// is read from and the key is empty, else nil.
func (e Endpoint) CheckKey() error {
	if e.APIKeyEnv != "" && e.APIKey == "" {
		return &KeyError{Endpoint: e.Name, Var: e.APIKeyEnv, From: e.APIKeyFrom}
	}
	return nil
}

// keyHint says what to check when the server refuses the key (401).
func keyHint(e Endpoint) string {
	switch {
	case e.APIKeyEnv != "":
		return "check " + e.APIKeyEnv
	case e.APIKey != "":
		return "check the API key"
	}
	return "no API key was sent: name the variable that holds it (api_key_env in the config, or OPENAI_API_KEY)"
}

// Kinds lists the kinds of server an endpoint may declare. The kinds whose
// servers enforce a strict JSON schema in response_format while decoding
// (OpenAI and Azure OpenAI, vLLM, llama.cpp's server, Ollama) default to
// structured output; the others default to tags: "openrouter" because
// whether a schema is enforced depends on the provider a request is routed
// to, and "other" (or no kind) because nothing is known of the server.
func Kinds() []string {
	return []string{"openai", "azure", "vllm", "llamacpp", "ollama", "openrouter", "other"}
}

// CheckKind reports an error for a kind not in Kinds ("" is allowed).
func CheckKind(kind string) error {
	if kind == "" || slices.Contains(Kinds(), kind) {
		return nil
	}
	return fmt.Errorf("kind %q: valid: %s", kind, strings.Join(Kinds(), ", "))
}

// DefaultOutput is the Output of an endpoint of kind that sets none:
// parse.JSONSchema for openai, azure, vllm, llamacpp and ollama,
// parse.Tags for every other kind and for none.
func DefaultOutput(kind string) parse.Output {
	switch kind {
	case "openai", "azure", "vllm", "llamacpp", "ollama":
		return parse.JSONSchema
	}
	return parse.Tags
}

// RoleBinding maps a role (annotator, analyzer, respondent, judge, …) to an
// endpoint by name, with parameters that override the endpoint's defaults.
type RoleBinding struct {
	Endpoint string
	Params   Params
	// Mode, when set, overrides the endpoint's mode for this role.
	Mode Mode
	// Inputs is, for the embedder role, how many texts one embeddings
	// request carries (0: DefaultEmbedInputs).
	Inputs int
}

// DefaultRole is the binding used for a role that has none of its own.
const DefaultRole = "default"

// DefaultFromEnv returns the endpoint described by OPENAI_BASE_URL and
// OPENAI_API_KEY, read through getenv (pass os.Getenv), with model given by
// OPENAI_MODEL when set. The base URL defaults to https://api.openai.com/v1
// when only a key is set. With only OPENAI_BASE_URL set the endpoint needs
// no key and is sent none (a local server, as the OpenAI SDKs' users reach
// vLLM or Ollama); a server that wants one answers 401, which stops the run
// at its first call. It reports false when neither variable is set, so a
// caller can say in one line that model-backed stages are skipped.
func DefaultFromEnv(getenv func(string) string) (Endpoint, bool) {
	base, key := getenv("OPENAI_BASE_URL"), getenv("OPENAI_API_KEY")
	if base == "" && key == "" {
		return Endpoint{}, false
	}
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	model := getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	ep := Endpoint{Name: "default", BaseURL: base, APIKey: Secret(key), Model: model}
	if key != "" {
		ep.APIKeyEnv = "OPENAI_API_KEY"
	}
	return ep, true
}
