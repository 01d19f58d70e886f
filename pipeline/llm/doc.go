// Package llm is ac3's way to OpenAI-compatible chat-completion endpoints
// (OpenAI, Azure, OpenRouter, vLLM, llama.cpp, Ollama). Every model-backed
// stage calls models through a Client.
//
// What lives here:
//
//   - Endpoint, RoleBinding and Params: plain option structs (config files
//     are parsed in cmd). Roles such as annotator, analyzer, respondent and
//     judge map to endpoints with parameter overrides; DefaultFromEnv reads
//     OPENAI_BASE_URL / OPENAI_API_KEY. Keys are Secret values that never
//     print. An endpoint that names its key variable (APIKeyEnv) and finds
//     it empty sends nothing: Options.CheckKeys says so before a run, and
//     every call to it returns the *KeyError; one that names none needs no
//     key.
//   - Client.Call: one request, sent with github.com/openai/openai-go/v3
//     (its retries off, its environment defaults unused) inside our own
//     machinery: per-endpoint RPM (x/time/rate) and TPM buckets, an adaptive
//     (AIMD) concurrency limit, endpoint-wide pauses when x-ratelimit-*
//     headers say the key's budget is spent, a per-attempt timeout, and a
//     circuit breaker. 400/422 fail the unit (*CallError); 401/403/404 and an
//     exhausted quota fail the run (ErrFatal, *FatalError), and so does an
//     endpoint that cannot be reached (its host does not resolve,
//     connections are refused, TLS fails) once it has gone
//     Limits.Unreachable (default 60s) without an answer
//     (*UnreachableError, naming the base URL and what to check). The batch
//     API classifies its faults the same way, with the same messages.
//   - Two kinds of retry. Rate-limit answers (429, 503/529 with Retry-After)
//     never fail a unit while the run goes on: each request waits what its
//     own answer asked (Retry-After, retry-after-ms, x-ratelimit-reset-*,
//     else backoff) for up to Limits.Patience (default 30 minutes). Other
//     transient failures (5xx, timeouts, resets, malformed bodies) are
//     retried with exponential backoff and full jitter up to MaxAttempts.
//     Options.Stop (a graceful stop) and a reached Budget end every wait at
//     once; requests already sent finish and are cached unless ctx ends
//     first (cmd gives them a few seconds after a Ctrl-C, then cancels).
//   - Concurrency adapts to overload without collapsing under 429s that do
//     not depend on load: it is cut at most once per round trip, only when
//     the share of overload answers rises with concurrency (a cut to a level
//     not measured lately is a probe, undone if nothing eased), and never
//     below Limits.MinConcurrency (see aimd in limiter.go).
//   - Never paying twice: a Cache keyed by Client.Key (a hash of the
//     canonical request, nothing secret in it, also sent as the
//     X-Ac3-Request-Key header), identical in-flight requests sent once with
//     the outcome shared, and a Recorder that receives one CallRecord per
//     call. MemCache and MemRecorder serve tests; the run's SQLite ledger
//     implements both.
//   - Money: Price, Usage, Budget (a concurrent-safe USD cap with
//     reservations) and EstimateCost for dry runs.
//   - Answers: reasoning is split from the text (<think> blocks and
//     reasoning fields); CallParsed re-asks with a fresh Reroll when a parser
//     rejects an answer and returns a *ParseError with the raw text at the
//     end. The parsers themselves are in pipeline/llm/parse. When 5 of a
//     stage's first 20 answers are rejected (Options.ParseWarnAfter,
//     ParseWarnWithin), one EventParseFailures says so with the parser's
//     error and the start of a raw answer, so a model that cannot follow a
//     stage's format is noticed after a few units.
//   - Structured output: each endpoint has an Output, parse.Tags or
//     parse.JSONSchema, set in its config or defaulted by its Kind (see
//     DefaultOutput). Client.Output tells a stage which one a role uses; a
//     request with a Schema to a json_schema endpoint carries it as a strict
//     json_schema in response_format, and its Schema is part of the cache
//     key.
//   - Ping: one tiny request reporting latency, model, usage and the
//     rate-limit headers.
//   - Embeddings (embed.go): Client.Embed sends texts to the endpoint of the
//     embedder role (EmbedderRole, never the default binding) at
//     POST /v1/embeddings, RoleBinding.Inputs texts a request, through the
//     same machinery as Call (limits, retries, budget, cache, records,
//     batch mode); vectors are cached as float32 (EncodeVectors).
//
// What does not: prompt texts (each stage embeds its own, rendered with
// pipeline/prompt), config parsing and CLI output (cmd), and storage (the
// ledger implements Cache and Recorder). Tests use the fake endpoint in
// pipeline/llm/llmtest and never reach the network.
package llm
