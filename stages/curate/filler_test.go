package curate_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
)

func TestFillerIsDeterministicAndLengthMatched(t *testing.T) {
	long := strings.Repeat("Here is the function you asked for, with comments. ", 30) +
		"```python\ndef add(a, b):\n    return a + b\n```"
	c := build("filler-1", "Be helpful.",
		"user", "Write an add function.", "assistant", long,
		"user", "Now in Go.", "assistant", "func add(a, b int) int { return a + b }",
		"user", "Thanks.", "assistant", "",
		"user", "Bye.")
	s := mustStrategy(t, "filler")
	first := curateAll(t, s, c, 1)
	again := curateAll(t, s, c, 1) // a fresh cache, as a second run would have
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("filler differs between runs:\n%+v\n%+v", first, again)
	}

	last := first[len(first)-1]
	fills := map[int]int{}
	for _, p := range last.Parts {
		if p.Fill > 0 {
			fills[p.Ref] = p.Fill
		}
	}
	if len(fills) != 2 {
		t.Fatalf("want filler for the two non-empty replies, got %v in %+v", fills, last.Parts)
	}
	// Each turn uses the same filler for the same message.
	for _, x := range first {
		for _, p := range x.Parts {
			if p.Fill > 0 && p.Fill != fills[p.Ref] {
				t.Errorf("turn %d: message %d has %d filler words, later turns %d", x.Turn, p.Ref, p.Fill, fills[p.Ref])
			}
		}
		checkContext(t, c, x)
	}

	msgs := curated.Materialize(c, last.Parts)
	cnt := counter(t)
	for i, m := range c.Messages[:len(c.Messages)-1] {
		got := msgs[i+1] // after the system message
		if m.Role != got.Role {
			t.Errorf("message %d: role %s became %s", i, m.Role, got.Role)
		}
		if m.Role != conv.Assistant {
			continue
		}
		want, have := cnt.Count(m.Content), cnt.Count(got.Content)
		if diff := have - want; diff < -2 || diff > 2 {
			t.Errorf("message %d: %d tokens of filler for %d tokens of reply", i, have, want)
		}
		if m.Content != "" && strings.Contains(got.Content, "add") {
			t.Errorf("message %d: filler leaks the reply: %q", i, got.Content)
		}
	}
	// Another conversation draws different filler.
	c2 := *c
	c2.ID = "filler-2"
	other := curated.Materialize(&c2, curateAll(t, s, &c2, 4)[0].Parts)
	if other[2].Content == msgs[2].Content {
		t.Errorf("two conversations got identical filler: %q", other[2].Content)
	}
}

func TestFillerTracksManyLengths(t *testing.T) {
	cnt := counter(t)
	s := mustStrategy(t, "filler")
	for _, n := range []int{1, 2, 5, 17, 80, 333, 1200} {
		reply := strings.Repeat("word ", n)
		c := build("len", "", "user", "q", "assistant", reply, "user", "q2")
		x := curateAll(t, s, c, 2)[0]
		got := cnt.Count(curated.Materialize(c, x.Parts)[1].Content)
		want := cnt.Count(reply)
		if d := got - want; d < -2 || d > 2 {
			t.Errorf("reply of %d tokens got %d tokens of filler", want, got)
		}
	}
}
