package curate

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
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

// The placeholder and system note of Huang et al., "Do LLMs benefit from
// their own words?", Appendix A.3 (the Assistant-Omitted configuration).
// They are the paper's strings, kept verbatim because a replication of its
// AO arm needs exactly them; everything else in ac3 is in our own words. The
// paper prints the quotes around the placeholder and the apostrophe in
// "user's" typographically (‘…’, ’); these use the ASCII characters a
// prompt written in code has.
const (
	HuangPlaceholder = "[Response provided]"
	HuangNote        = "In this conversation, previous assistant responses are shown as '[Response provided]' to save memory. " +
		"These are placeholders indicating the turn was already answered and has passed. " +
		"Focus only on answering the user's most recent message."
)

// AOOptions is ao's placeholder and system note. Empty fields take the
// defaults: DefaultPlaceholder, and DefaultNote reworded to name the
// placeholder in use. Any non-default value changes ao's Version, so the
// unit keys of contexts built with other strings differ.
type AOOptions struct {
	// Placeholder is the text that stands in for each hidden assistant
	// reply or tool result.
	Placeholder string
	// Note is the system note that explains the placeholder; it should
	// quote Placeholder, since it is the respondent's only key to it.
	Note string
}

// HuangAO returns the options that reproduce Huang et al.'s AO arm:
// HuangPlaceholder and HuangNote.
func HuangAO() AOOptions { return AOOptions{Placeholder: HuangPlaceholder, Note: HuangNote} }

// Validate reports a setting that would send a blank message: a placeholder
// or note given but made only of spaces. An empty field is valid (the
// default).
func (o AOOptions) Validate() error {
	if o.Placeholder != "" && strings.TrimSpace(o.Placeholder) == "" {
		return errors.New("ao placeholder is blank: give a visible text or leave it unset for the default")
	}
	if o.Note != "" && strings.TrimSpace(o.Note) == "" {
		return errors.New("ao note is blank: give a visible text or leave it unset for the default")
	}
	return nil
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

// NewAssistantOmission returns ao with opts.AO's placeholder and note, or
// the defaults. A custom placeholder without a custom note gets the default
// note rewritten to name it. It does not check opts.AO (ByName does; see
// AOOptions.Validate).
func NewAssistantOmission(opts Options) AssistantOmission {
	o := opts.AO
	s := AssistantOmission{placeholder: DefaultPlaceholder, note: o.Note, version: "1"}
	if o.Placeholder != "" {
		s.placeholder = o.Placeholder
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
func (s AssistantOmission) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	first := -1 // index of the first placeholder
	sel, view, cost, err := messageView(ctx, c, from, ws, func(i int) (curated.Part, int, bool) {
		m := c.Messages[i]
		if !isAssistantSide(m.Role) {
			return curated.Part{}, 0, false
		}
		if first < 0 {
			first = i
		}
		return curated.TextPart(m.Role, s.placeholder), ws.Cost(m.Role, ws.Text(s.placeholder)), true
	})
	if err != nil || len(sel) == 0 {
		return nil, err
	}
	// Turns up to the first placeholder need no note; the rest get it.
	split := len(sel)
	if first >= 0 {
		split = 0
		for split < len(sel) && sel[split].User < first {
			split++
		}
	}
	head, headCost := systemHead(c, ws)
	out := prefixContexts(s.Name(), sel[:split], head, headCost, view, cost)
	if split < len(sel) {
		noted, notedCost := s.notedHead(c, ws)
		out = append(out, prefixContexts(s.Name(), sel[split:], noted, notedCost, view, cost)...)
	}
	return out, nil
}

// notedHead is the system message with the note joined on, or the note alone.
func (s AssistantOmission) notedHead(c *conv.Conversation, ws *Workspace) ([]curated.Part, int) {
	note := curated.TextPart(conv.System, s.note)
	if c.System == "" {
		return []curated.Part{note}, ws.Cost(conv.System, ws.Text(s.note))
	}
	note.Join = true
	return []curated.Part{curated.SystemPart(), note}, ws.Cost(conv.System, ws.Text(c.System+curated.JoinSeparator+s.note))
}
