// Package openaichat reads chat logs in the OpenAI chat shape, one record a
// line: {"messages":[{"role","content"}], ...}, where content is a string or
// a list of typed parts. It also reads ac3's own canonical JSONL (written by
// jsonl.Writer), which is the same shape with a few more fields, so a run's
// output can be fed back in.
package openaichat
