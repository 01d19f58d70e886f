package curate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate"
)

// randomText mixes prose, code, numbers, unicode and odd white space, the
// places where token boundaries get interesting.
func randomText(r *rand.Rand) string {
	pieces := []string{
		"the", "quick", "brown", "fox", "Hello", "world", "can't", "don't", "I'll",
		"func", "main()", "{", "}", "x := 42", "1234567", "3.14159", "==", "->",
		"日本語", "émigré", "naïve", "🙂", "—", "\n", "\n\n", "  ", "\t", "<|endoftext|>",
		"https://example.com/a?b=c", "```go", "```", "#", "**bold**", "'s", " ",
	}
	n := r.IntN(40)
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
		if r.IntN(3) > 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func randomConversation(r *rand.Rand, k int) *conv.Conversation {
	c := &conv.Conversation{ID: fmt.Sprintf("rand-%d", k)}
	if r.IntN(2) == 0 {
		c.System = randomText(r) + "system"
	}
	roles := []conv.Role{conv.User, conv.User, conv.Assistant, conv.Assistant, conv.Tool, conv.System}
	for range r.IntN(14) {
		c.Messages = append(c.Messages, conv.Message{Role: roles[r.IntN(len(roles))], Content: randomText(r)})
	}
	return c
}

// TestPropertyTotalsMatchDirectCounts curates random conversations with every
// strategy and checks each context against its materialized messages.
func TestPropertyTotalsMatchDirectCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 120
	if testing.Short() {
		n = 30
	}
	for k := range n {
		c := randomConversation(r, k)
		from := r.IntN(4)
		tc := curate.NewWorkspace(c, counter(t)) // shared by all strategies, as in a run
		for _, name := range curate.Names() {
			xs, err := mustStrategy(t, name).Contexts(context.Background(), c, from, tc)
			if err != nil {
				t.Fatal(err)
			}
			var want []int
			for _, tr := range c.Turns() {
				if tr.Index >= max(from, 1) {
					want = append(want, tr.Index)
				}
			}
			var got []int
			for _, x := range xs {
				got = append(got, x.Turn)
				checkContext(t, c, x)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s on %s from %d: turns %v, want %v", name, c.ID, from, got, want)
			}
		}
		if t.Failed() {
			t.Fatalf("first failing conversation: %+v", c)
		}
	}
}

func TestContextsStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range curate.Names() {
		_, err := mustStrategy(t, name).Contexts(ctx, plain, 1, curate.NewWorkspace(plain, counter(t)))
		if err == nil {
			t.Errorf("%s: no error on a cancelled context", name)
		}
	}
}
