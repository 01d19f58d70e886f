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
//     print.
//   - Client.Call: one request, sent with github.com/openai/openai-go/v3
//     (its retries off, its environment defaults unused) inside our own
//     machinery: per-endpoint RPM (x/time/rate) and TPM buckets, an adaptive
//     (AIMD) concurrency limit, endpoint-wide pauses driven by Retry-After,
//     retry-after-ms and x-ratelimit-* headers, retries with exponential
//     backoff and full jitter, a per-attempt timeout, an attempt cap, and a
//     circuit breaker. 400/422 fail the unit (*CallError); 401/403/404 and an
//     exhausted quota fail the run (ErrFatal, *FatalError).
//   - Never paying twice: a Cache keyed by Client.Key (a hash of the
//     canonical request, nothing secret in it), identical in-flight requests
//     merged, and a Recorder that receives one CallRecord per call. MemCache
//     and MemRecorder serve tests; the run's SQLite ledger implements both.
//   - Money: Price, Usage, Budget (a concurrent-safe USD cap with
//     reservations) and EstimateCost for dry runs.
//   - Answers: reasoning is split from the text (<think> blocks and
//     reasoning fields); CallParsed re-asks with a fresh Reroll when a parser
//     rejects an answer and returns a *ParseError with the raw text at the
//     end. The parsers themselves are in pipeline/llm/parse.
//   - Ping: one tiny request reporting latency, model, usage and the
//     rate-limit headers.
//
// What does not: prompt texts (each stage embeds its own, rendered with
// pipeline/prompt), config parsing and CLI output (cmd), and storage (the
// ledger implements Cache and Recorder). Tests use the fake endpoint in
// pipeline/llm/llmtest and never reach the network.
package llm
