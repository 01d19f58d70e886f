package curate_test

import (
	"context"
	"sync"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// sharedCounter is built once per test binary: loading a BPE table takes a
// noticeable fraction of a second and a Counter is safe to share.
var sharedCounter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New("") })

func counter(tb testing.TB) *tokens.Counter {
	tb.Helper()
	c, err := sharedCounter()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// build makes a conversation from alternating role/content pairs.
func build(id, system string, rc ...string) *conv.Conversation {
	c := &conv.Conversation{ID: id, System: system}
	for i := 0; i+1 < len(rc); i += 2 {
		c.Messages = append(c.Messages, conv.Message{Role: conv.Role(rc[i]), Content: rc[i+1]})
	}
	return c
}

func curateAll(tb testing.TB, s curate.Strategy, c *conv.Conversation, from int) []curated.Context {
	tb.Helper()
	xs, err := s.Contexts(context.Background(), c, from, curate.NewWorkspace(c, counter(tb)))
	if err != nil {
		tb.Fatal(err)
	}
	return xs
}

func mustStrategy(tb testing.TB, name string) curate.Strategy {
	tb.Helper()
	s, err := curate.ByName(name, curate.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
