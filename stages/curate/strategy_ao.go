package curate

import (
	"context"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// DefaultPlaceholder stands in for each hidden assistant reply or tool result
// in ao. It is short, fixed and plainly not an answer, so a respondent cannot
// mistake it for content to build on.
const DefaultPlaceholder = "[earlier reply omitted]"

// DefaultNote is ao's system note for DefaultPlaceholder. It is our own
// wording: it says what the marker means and where to look instead, without
// telling the respondent to pretend the replies never happened.
const DefaultNote = "About the history below: earlier assistant replies and tool results were left out on purpose. " +
	"Each one appears only as \"[earlier reply omitted]\", and its content is not available to you. " +
	"Work from what the user wrote and answer the user's latest message."

// noteFor writes DefaultNote's text around another placeholder.
func noteFor(placeholder string) string {
	return strings.Replace(DefaultNote, `"`+DefaultPlaceholder+`"`, strconv.Quote(placeholder), 1)
}

// AssistantOmission is ao: the user side of C_t, with every earlier
// assistant or tool message replaced by one fixed placeholder (keeping its
// role, so the turn structure stays intact), and a short note explaining the
// placeholder appended to the system message (or given as the system message
// when the conversation has none). The note appears only once there is a
// placeholder to explain.
type AssistantOmission struct {
	placeholder, note string
	version           string
}

// NewAssistantOmission returns ao with opts' placeholder and note, or the
// defaults. A custom placeholder without a custom note gets the default note
// rewritten to name it.
func NewAssistantOmission(opts Options) AssistantOmission {
	s := AssistantOmission{placeholder: DefaultPlaceholder, note: opts.Note, version: "1"}
	if opts.Placeholder != "" {
		s.placeholder = opts.Placeholder
	}
	if s.note == "" {
		s.note = noteFor(s.placeholder)
	}
	if s.placeholder != DefaultPlaceholder || s.note != DefaultNote {
		s.version = versionOf(s.version, s.placeholder, s.note)
	}
	return s
}

// Name returns "ao".
func (AssistantOmission) Name() string { return "ao" }

// Version returns the version of ao's output; it carries a hash of the
// placeholder and note when they differ from the defaults.
func (s AssistantOmission) Version() string { return s.version }

// Placeholder returns the text that stands in for hidden messages.
func (s AssistantOmission) Placeholder() string { return s.placeholder }

// Note returns the system note that explains the placeholder.
func (s AssistantOmission) Note() string { return s.note }

// Contexts builds the ao context for each turn t >= from.
func (s AssistantOmission) Contexts(ctx context.Context, c *conv.Conversation, from int, tc *TokenCache) ([]Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, _ := selectTurns(c, from)
	if len(sel) == 0 {
		return nil, nil
	}
	last := sel[len(sel)-1].User
	view := make([]Part, last+1)
	cost := make([]int, last+1)
	first := -1 // index of the first placeholder
	for i := range view {
		m := c.Messages[i]
		if isAssistantSide(m.Role) {
			view[i] = TextPart(m.Role, s.placeholder)
			cost[i] = tc.Cost(m.Role, tc.Text(s.placeholder))
			if first < 0 {
				first = i
			}
			continue
		}
		view[i] = MessagePart(i)
		cost[i] = messageCost(c, tc, i)
	}

	// Turns up to the first placeholder need no note; the rest get it.
	split := len(sel)
	if first >= 0 {
		split = 0
		for split < len(sel) && sel[split].User < first {
			split++
		}
	}
	head, headCost := systemHead(c, tc)
	out := prefixContexts(s.Name(), sel[:split], head, headCost, view, cost)
	if split < len(sel) {
		noted, notedCost := s.notedHead(c, tc)
		out = append(out, prefixContexts(s.Name(), sel[split:], noted, notedCost, view, cost)...)
	}
	return out, nil
}

// notedHead is the system message with the note joined on, or the note alone.
func (s AssistantOmission) notedHead(c *conv.Conversation, tc *TokenCache) ([]Part, int) {
	note := TextPart(conv.System, s.note)
	if c.System == "" {
		return []Part{note}, tc.Cost(conv.System, tc.Text(s.note))
	}
	note.Join = true
	return []Part{SystemPart(), note}, tc.Cost(conv.System, tc.Text(c.System+JoinSeparator+s.note))
}
