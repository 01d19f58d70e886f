package classify

import (
	"fmt"
	"io"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/annotator"
)

// labelledConversation is one line of a conversation-per-line labelled set
// (fixtures/labelled/classify-wildchat.jsonl): a whole conversation, stored
// once, and the labels of some of its user turns.
type labelledConversation struct {
	ID       string         `json:"id"`
	Hash     string         `json:"conversation_hash"`
	Source   string         `json:"source"`
	Split    string         `json:"split"`
	Language string         `json:"language"`
	Messages []conv.Message `json:"messages"`
	Labels   []turnLabel    `json:"labels"`
}

type turnLabel struct {
	Turn int      `json:"turn"`
	Lang string   `json:"lang"`
	Type string   `json:"type"`
	Refs []string `json:"refs"`
	Note string   `json:"note"`
}

// ReadConversationSet reads a labelled set stored one conversation a line
// (the shape of fixtures/labelled/classify-wildchat.jsonl) and returns one
// Example per labelled turn, in file order. Each Example's messages are the
// conversation up to and including its turn; they share the conversation's
// backing array, so the set is held in memory once.
//
// Every line is checked: a known split, a language for every label, gold
// types among Types(), turns t >= 2 that exist, refs that point inside the
// conversation, and no turn labelled twice.
func ReadConversationSet(r io.Reader) ([]Example, error) {
	convs, err := annotator.ReadLabelled(r, checkLabelledConversation)
	if err != nil {
		return nil, err
	}
	var out []Example
	for _, lc := range convs {
		c := &conv.Conversation{ID: lc.ID, Messages: lc.Messages}
		at := map[int]int{} // turn -> index of u_t in Messages
		for _, tr := range c.Turns() {
			at[tr.Index] = tr.User
		}
		for _, l := range lc.Labels {
			end := at[l.Turn] + 1 // the turn exists: checked while reading
			out = append(out, Example{
				ID:       fmt.Sprintf("%s/t%d", lc.ID, l.Turn),
				Split:    lc.Split,
				Messages: lc.Messages[:end:end],
				Turn:     l.Turn,
				Type:     l.Type,
				Refs:     l.Refs,
				Note:     l.Note,
				Lang:     l.Lang,
			})
		}
	}
	return out, nil
}

func checkLabelledConversation(lc labelledConversation) error {
	if lc.ID == "" {
		return fmt.Errorf("(%s): no id", lc.Hash)
	}
	if lc.Split != Dev && lc.Split != Test {
		return fmt.Errorf("(%s): split %q", lc.ID, lc.Split)
	}
	if len(lc.Labels) == 0 {
		return fmt.Errorf("(%s): no labels", lc.ID)
	}
	c := &conv.Conversation{ID: lc.ID, Messages: lc.Messages}
	seen := map[int]bool{}
	for _, l := range lc.Labels {
		if !validType(l.Type) {
			return fmt.Errorf("(%s) turn %d: type %q", lc.ID, l.Turn, l.Type)
		}
		if l.Lang == "" {
			return fmt.Errorf("(%s) turn %d: no lang", lc.ID, l.Turn)
		}
		if _, ok := c.UserTurn(l.Turn); !ok || l.Turn < 2 {
			return fmt.Errorf("(%s): no user turn %d (t >= 2)", lc.ID, l.Turn)
		}
		if seen[l.Turn] {
			return fmt.Errorf("(%s): turn %d labelled twice", lc.ID, l.Turn)
		}
		seen[l.Turn] = true
		if _, err := checkRefs(l.Refs, l.Turn); err != nil {
			return fmt.Errorf("(%s) turn %d: %w", lc.ID, l.Turn, err)
		}
	}
	return nil
}
