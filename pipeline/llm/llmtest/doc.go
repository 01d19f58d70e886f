// Package llmtest is an in-process OpenAI-compatible chat-completions server
// for tests and benchmarks. Nothing outside _test files should import it.
//
// A Server answers POST /v1/chat/completions (and /chat/completions) from
// scripted rules: each Rule matches requests (by a function, or by a
// substring of the last or system message), fires on a Schedule (always,
// the first N matches, every k-th, a seeded fraction of matches), and
// either replies (content, reasoning field, usage, latency, headers) or
// misbehaves on purpose with a Fault. Options.Latency delays every answer
// (never a fault), for benchmarks that need a model's pace.
//
// It also answers POST /v1/embeddings (and /embeddings) deterministically:
// each input gets Embedding(text, Options.EmbedDim), a normalized hashed
// bag of words, so texts on one topic lie nearer each other than texts on
// another, with usage EmbedTokens (len/4+1 a text). Rules and chaos match
// embeddings requests as they match chat ones (ChatRequest.Inputs reads
// their texts), and the same faults apply: Truncated cuts the body,
// Malformed sends no data, Garbled sends one vector short. Batches of
// /v1/embeddings lines are emulated like chat batches.
//
// # Faults
//
// Every fault a client must survive can be injected:
//
//   - Status: an HTTP error with an OpenAI-style body, e.g. 429 with or
//     without Retry-After / retry-after-ms / x-ratelimit-* headers (set in
//     Fault.Headers), 500, 502, 503 with or without Retry-After, 529, or a
//     429 with code "insufficient_quota";
//   - Hang: hold the request past the client's timeout (until the client
//     hangs up, the server closes, or Fault.Latency passes; default 1 min);
//   - Reset: close the TCP connection with an RST, sending nothing;
//   - Truncated: a 200 whose JSON body stops halfway;
//   - Malformed: a 200 with valid JSON that is not a chat completion (no
//     choices);
//   - Garbled: a well-formed completion whose content no stage's parser
//     accepts (Fault.Message, or a fixed nonsense line).
//
// A Rule's Schedule counts its own matches, so under concurrency which
// request gets a fault depends on arrival order. For chaos tests that must
// be reproducible, Chaos decides per request instead: a seeded hash of the
// request's identity and of how many times it arrived before picks the
// fault (or none) for each arrival. The same request meets the same faults
// on its 1st, 2nd, … attempt in every run, and a retry draws afresh.
// Chaos.MaxPerRequest bounds the faults one request can meet. Chaos is
// tried before the rules; an arrival it spares is answered by the rules.
//
// # Structured output
//
// A request that asks for a json_schema in response_format is checked the
// way a strict endpoint checks it, before anything else: the schema must be
// strict (CheckStrict: every object closed with additionalProperties false
// and all its properties required, arrays with items, enums non-empty and
// of the right type), strict must be true and the name well formed;
// otherwise the answer is a 400 naming the problem. Its reply must then
// conform to the schema (Conforms), as an enforcing server's would: a
// scripted reply that does not is a mistake in the test and is answered
// with a 400 too (unless Options.Unenforced: then replies go out as
// scripted, as from a server that ignores the schema). Both are logged in
// Call.SchemaError. Scripts answer in
// JSON with the JSON helper, and read what was asked with
// ChatRequest.Schema. A Garbled fault still sends its text as it is: a
// server that ignores response_format.
//
// # Prompt cache
//
// The server emulates a provider's prefix cache (prefixcache.go): a request
// that shares its first 1,024 tokens or more with one of the last
// Options.CacheWindow requests of the same model reports the shared part,
// in steps of 128 tokens, as usage.prompt_tokens_details.cached_tokens, as
// OpenAI, Azure and vLLM do. Tokens are counted as the default usage counts
// them, 4 bytes each, so no tokenizer is needed and the figures depend on
// the order of arrival only. Call.Cached logs it; a reply that scripts its
// own Usage reports what it scripts; Options.NoPrefixCache turns it off.
//
// # The arrival log
//
// Every request is logged as a Call: arrival and end times, path, headers,
// body, the decoded request, the rule and fault that answered, the status
// sent, and three ways to recognise it:
//
//   - Key, the client's cache key, which ac3's client sends in KeyHeader
//     (a hash of the request, nothing secret);
//   - PromptHash, a SHA-256 of the model and messages;
//   - Nth, how many times this request (by Key, else by body) has arrived,
//     this one included.
//
// A test can thus check that no request was sent again after its unit was
// recorded as done: compare each Call.Time with the completion time of the
// unit whose request has that Key. Options.ArrivalLog also streams the
// arrivals as JSON lines, one per request, as they happen.
//
// A test that kills and restarts client processes gives each its own Door,
// another address served alike, and reads whose a request was from
// Call.Door: the time of an arrival cannot tell, since a request a process
// wrote just before its kill may be read after the next process started.
//
// A Server can also enforce its own request-rate limit and count the
// requests that broke it (Violations, MaxInWindow), to catch clients that
// exceed their limits, and reports the most requests it handled at once
// (MaxInFlight).
package llmtest
