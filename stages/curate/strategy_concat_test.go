package curate_test

import (
	"reflect"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Concat joins the texts the user's messages were worded from when they
// carry them (a LiC trajectory's shards behind the simulator's wording),
// and leaves out a message worded from none; without originals it joins
// the messages as written. Expected contexts worked by hand.
func TestConcatJoinsOriginals(t *testing.T) {
	sys := "Answer with one number."
	c := &conv.Conversation{ID: "lic-1#r1", System: sys, Messages: []conv.Message{
		{Role: conv.User, Content: "A farmer has 12 hens.", Original: "A farmer has 12 hens."},                        // shard 1, verbatim
		{Role: conv.Assistant, Content: "OK."},                                                                        //
		{Role: conv.User, Content: "oh and each one lays like 3 eggs daily", Original: "Each hen lays 3 eggs a day."}, // shard 2, reworded
		{Role: conv.Assistant, Content: "36 eggs."},
		{Role: conv.User, Content: "hmm, thinking..."}, // the simulator revealed nothing
		{Role: conv.Assistant, Content: "Take your time."},
		{Role: conv.User, Content: "how many in a week tho", Original: "How many eggs are laid in a week?"}, // shard 3, reworded
	}}
	tests := []struct {
		turn int
		want string
	}{
		{1, "A farmer has 12 hens."},
		// The originals, the small talk (worded from nothing) left out.
		{2, "A farmer has 12 hens.\n\nEach hen lays 3 eggs a day."},
		{3, "A farmer has 12 hens.\n\nEach hen lays 3 eggs a day."},
		{4, "A farmer has 12 hens.\n\nEach hen lays 3 eggs a day.\n\nHow many eggs are laid in a week?"},
	}
	xs := curateAll(t, mustStrategy(t, "concat"), c, 1)
	if len(xs) != len(tests) {
		t.Fatalf("%d contexts, want %d", len(xs), len(tests))
	}
	for i, tc := range tests {
		x := xs[i]
		if err := curated.Validate(c, x.Parts); err != nil {
			t.Fatalf("turn %d: %v", tc.turn, err)
		}
		got := curated.Materialize(c, x.Parts)
		want := []conv.Message{{Role: conv.System, Content: sys}, {Role: conv.User, Content: tc.want}}
		if x.Turn != tc.turn || !reflect.DeepEqual(got, want) || x.Messages != 2 {
			t.Errorf("turn %d (context of turn %d, %d messages):\n got %q\nwant %q", tc.turn, x.Turn, x.Messages, got, want)
		}
		b, err := curated.EncodeContext(x)
		if err != nil {
			t.Fatal(err)
		}
		back, err := curated.DecodeContext(b)
		if err != nil || !reflect.DeepEqual(curated.Materialize(c, back.Parts), want) {
			t.Errorf("turn %d: stored and read back: %v, %q", tc.turn, err, curated.Materialize(c, back.Parts))
		}
	}
}
