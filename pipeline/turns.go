package pipeline

import (
	"fmt"
	"strings"
)

// Turns selects the user turns of each conversation a stage works on. The
// zero Turns selects every turn.
//
// Last keeps only the final Last user turns of each conversation, whatever
// its length: replaying the last turn of a simulated trajectory, or probing
// the last turn of a stitched instance, costs one unit per conversation
// instead of one per turn. With both set, a turn is selected when it is
// both from From on and among the last Last.
type Turns struct {
	From int // first user turn, 1-based; 0 for no lower bound
	Last int // the last Last user turns only; 0 for all
}

// Validate reports negative settings.
func (s Turns) Validate() error {
	if s.From < 0 {
		return fmt.Errorf("from_turn is %d; want 1 or more (0 for the default)", s.From)
	}
	if s.Last < 0 {
		return fmt.Errorf("last_turns is %d; want 1 or more (0 for every turn)", s.Last)
	}
	return nil
}

// First is the first selected user turn of a conversation with userTurns
// user turns (conv.Conversation.UserTurns); turns from it to userTurns are
// selected. It is above userTurns when none is.
func (s Turns) First(userTurns int) int {
	first := max(s.From, 1)
	if s.Last > 0 {
		first = max(first, userTurns-s.Last+1)
	}
	return first
}

// Has reports whether user turn t of a conversation with userTurns user
// turns is selected.
func (s Turns) Has(t, userTurns int) bool {
	return t >= s.First(userTurns) && t <= userTurns
}

// Tag is what the selection adds to a stage variant's version: ";from=N"
// and ";last=K" for the settings that are set, "" for the zero Turns, so
// that a stage that did not select turns before keeps its unit keys.
func (s Turns) Tag() string {
	var b strings.Builder
	if s.From > 0 {
		fmt.Fprintf(&b, ";from=%d", s.From)
	}
	if s.Last > 0 {
		fmt.Fprintf(&b, ";last=%d", s.Last)
	}
	return b.String()
}
