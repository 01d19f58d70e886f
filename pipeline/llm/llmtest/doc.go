// Package llmtest is an in-process OpenAI-compatible chat-completions server
// for tests and benchmarks. Nothing outside _test files should import it.
//
// A Server answers POST /v1/chat/completions (and /chat/completions) from
// scripted rules: each Rule matches requests (by a function, or by a
// substring of the last or system message), fires on a Schedule (always,
// the first N matches, every k-th, a seeded fraction), and either replies
// (content, reasoning field, usage, latency, headers) or misbehaves on
// purpose: an HTTP error with or without Retry-After / retry-after-ms /
// x-ratelimit-* headers, a hang past the client's timeout, a connection
// reset, or a truncated JSON body.
//
// Every request is logged with its body, headers and arrival time, so tests
// can assert exactly how many calls were made and what was sent. A Server
// can also enforce its own request-rate limit and count the requests that
// broke it, to catch clients that exceed their limits.
package llmtest
