package parse

import "strings"

// SplitThink separates a reasoning trace from the answer in text.
//
// It recognises a leading or embedded <think>…</think> block (several blocks
// are joined with a blank line) and the form some chat templates produce
// where the opening tag is part of the prompt, so the answer holds only a
// closing </think>: everything before that first closing tag is reasoning.
// An unterminated <think> block is treated as reasoning that ran to the end,
// which leaves an empty answer. Both results are trimmed of surrounding space.
func SplitThink(text string) (answer, reasoning string) {
	const open, closing = "<think>", "</think>"
	var ans, rsn []string
	rest := text
	// A closing tag before any opening tag: the prompt opened the block.
	if c := strings.Index(rest, closing); c >= 0 {
		if o := strings.Index(rest, open); o < 0 || o > c {
			rsn = append(rsn, rest[:c])
			rest = rest[c+len(closing):]
		}
	}
	for {
		o := strings.Index(rest, open)
		if o < 0 {
			ans = append(ans, rest)
			break
		}
		ans = append(ans, rest[:o])
		rest = rest[o+len(open):]
		c := strings.Index(rest, closing)
		if c < 0 {
			rsn = append(rsn, rest)
			break
		}
		rsn = append(rsn, rest[:c])
		rest = rest[c+len(closing):]
	}
	var parts []string
	for _, r := range rsn {
		if r = strings.TrimSpace(r); r != "" {
			parts = append(parts, r)
		}
	}
	return strings.TrimSpace(strings.Join(ans, "")), strings.Join(parts, "\n\n")
}
