package curate

import (
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
)

// ResetTemplate names the form reset and gated-reset give the history they
// replace. Both are fixed texts filled from the analysis, so neither makes a
// call, and each has its own version in the operator's Version.
type ResetTemplate string

const (
	// ResetAC3 is our template (the default; "" means it too): one user
	// message holding the consolidated request and the work that fits it
	// (ResetText), with the user's latest message joined after it. The
	// issues are left out: the reset drops the history they describe.
	ResetAC3 ResetTemplate = "ac3"
	// ResetWildChat is the form Ho et al. used for Gated Reset on WildChat
	// (AC3, Section C.2, the note after Prompt 3): the issues the analyzer
	// found go into the system message (WildChatIssuesNote), the request and
	// the work that fits it become a user message (WildChatResetText), a short
	// assistant acknowledgment follows (WildChatAck), and then the user's
	// latest message as a message of its own, so roles keep alternating.
	// The paper describes this form, not its wording; the texts are ours.
	ResetWildChat ResetTemplate = "wildchat"
)

// ResetTemplates lists the valid reset templates, the default first.
func ResetTemplates() []ResetTemplate { return []ResetTemplate{ResetAC3, ResetWildChat} }

// ParseResetTemplate maps a name ("" for the default) to a ResetTemplate.
func ParseResetTemplate(s string) (ResetTemplate, error) {
	return parseChoice(s, "reset template", ResetAC3, ResetWildChat)
}

// Version returns the version of the template's fixed texts; bump a value
// when its texts change. ResetAC3's texts are versioned by templateVersion,
// which every operator's version carries.
func (r ResetTemplate) Version() string {
	switch r {
	case "", ResetAC3:
		return templateVersion
	case ResetWildChat:
		return "w1"
	}
	return "unknown"
}

// WildChatIssuesNote is what ResetWildChat adds to the system message: the
// problems the analyzer found in the replaced history, so the respondent
// does not repeat them even though the replies that made them are gone.
func WildChatIssuesNote(issues string) string {
	return "Note on this conversation: its earlier part has been condensed into the summary that opens it. " +
		"A review of the assistant's earlier replies, which are no longer shown, found the problems below. " +
		"Do not repeat them.\n\n" + strings.TrimSpace(issues)
}

// WildChatResetText is ResetWildChat's summary message: the consolidated
// request and the work that fits it, marked as a summary so the respondent
// does not read it as the user's own words.
func WildChatResetText(spec, aligned string) string {
	return "[Summary of the conversation so far, written by a reviewer from the user's messages and the earlier work]\n\n" +
		"What the user wants:\n" + strings.TrimSpace(spec) + "\n\n" +
		"Earlier work that fits the request:\n" + orNothing(aligned)
}

// WildChatAck is ResetWildChat's assistant turn between the summary and the
// user's latest message: short, and committing to nothing beyond the summary.
const WildChatAck = "Understood. I will continue from this summary."

// Replay says how an AC3 operator that removes content builds the turns of
// a logged conversation after it has acted once.
type Replay string

const (
	// ReplayContinue (the default; "" means it too): once the operator
	// replaced the history at turn k, later turns continue from that
	// replacement (then the logged a_k, u_{k+1}, …, u_t), as they would in
	// a conversation that went on after the reset; a pass at a later turn
	// keeps that context, and after the cap the operator stops acting but
	// the last replacement stays.
	ReplayContinue Replay = "continue"
	// ReplayPrefix: every turn is its own logged prefix C_t, curated on its
	// own, as when each prefix of a logged conversation is a separate
	// evaluation item (the WildChat protocol of Huang et al. and of Ho et
	// al., Section 5.4 and B.6): at turn t the context is the replacement
	// made from turn t's analysis, or C_t unchanged when the operator does
	// not act (a pass, the floor, the cap). This is Algorithm 1 of the AC3
	// paper read per prefix. The cap counts within each prefix, so it
	// never binds when only the final turn is decided: the paper's Gated
	// Reset intervened on 72.3% of WildChat turns (§5.4), which a cap of 3
	// counted across a conversation of 5 to 10 rounds could not allow.
	ReplayPrefix Replay = "prefix"
)

// Replays lists the valid replay modes, the default first.
func Replays() []Replay { return []Replay{ReplayContinue, ReplayPrefix} }

// ParseReplay maps a name ("" for the default) to a Replay.
func ParseReplay(s string) (Replay, error) {
	return parseChoice(s, "replay mode", ReplayContinue, ReplayPrefix)
}

// parseChoice reads s, trimmed, as def ("" means it too) or other; what
// names the choice in the error. The two-way settings of this file all
// parse alike.
func parseChoice[T ~string](s, what string, def, other T) (T, error) {
	switch v := T(strings.TrimSpace(s)); v {
	case "", def:
		return def, nil
	case other:
		return v, nil
	}
	return "", fmt.Errorf("parsing %s %q: valid: %s, %s", what, s, def, other)
}

// form is how an AC3 operator writes what it puts in place of the history:
// the reset template, the rewrite prompt, the replay of later turns.
type form struct {
	reset   ResetTemplate
	rewrite analyze.RewriteVariant
	replay  Replay
	texts   Texts
	restate Restate
}

// formOf reads and checks the operator settings of opts, defaults filled in.
func formOf(opts Options) (form, error) {
	var f form
	var err error
	if f.reset, err = ParseResetTemplate(string(opts.ResetTemplate)); err != nil {
		return f, err
	}
	if f.rewrite, err = analyze.ParseRewriteVariant(string(opts.Rewrite)); err != nil {
		return f, err
	}
	if f.replay, err = ParseReplay(string(opts.Replay)); err != nil {
		return f, err
	}
	if err := opts.Texts.check(f); err != nil {
		return f, err
	}
	f.texts = opts.Texts
	if (opts.Restate.Name == "") != (opts.Restate.Text == nil) {
		return f, fmt.Errorf("a restated line needs both its name and its text (%q)", opts.Restate.Name)
	}
	f.restate = opts.Restate
	return f, nil
}

// version is what the form adds to operator op's version: nothing for the
// defaults (so unit keys made before these settings existed stay valid), and
// otherwise only the settings that change op's output.
func (f form) version(op string, an *analyze.Analyzer) string {
	var v string
	if op == curated.OpRewrite {
		v += ";" + an.RewriteVersion(f.rewrite)
	}
	if (op == curated.OpReset || op == curated.OpGatedReset) && f.reset != ResetAC3 {
		v += ";reset=" + string(f.reset) + "@" + f.reset.Version()
	}
	if op != curated.OpAugment && f.replay != ReplayContinue {
		v += ";replay=" + string(f.replay)
	}
	if op == curated.OpGatedReset && f.restate.Name != "" {
		v += ";restate=" + f.restate.Name
	}
	return v + f.textVersion(op)
}

// replacement builds the context an operator puts in place of the history
// before turn tr: head (the system message, if any), the replacement, then
// u_t. text is the rewrite's context for rewrite and unused for the resets.
// It fails only when a user's text template does not render.
func (f form) replacement(op string, c *conv.Conversation, head []curated.Part, a analyze.Analysis, text string, tr conv.Turn) ([]curated.Part, error) {
	parts, err := f.replaced(op, c, head, a, text, tr)
	if err != nil || f.restate.Text == nil || op != curated.OpGatedReset {
		return parts, err
	}
	if line := f.restate.Text(c); line != "" {
		extra := curated.TextPart(conv.User, line)
		extra.Join = true
		parts = append(parts, extra)
	}
	return parts, nil
}

// replaced is replacement without the restated line.
func (f form) replaced(op string, c *conv.Conversation, head []curated.Part, a analyze.Analysis, text string, tr conv.Turn) ([]curated.Part, error) {
	u := curated.MessagePart(tr.User)
	switch {
	case op == curated.OpRewrite && (f.rewrite == analyze.RewritePaper || f.rewrite == analyze.RewriteEarlier):
		// The paper's rewrites return the whole message the respondent
		// sees before u_t; it goes in as written, u_t joined after it. An
		// empty one means the model kept nothing: u_t alone follows head.
		parts := append(make([]curated.Part, 0, len(head)+2), head...)
		if text = strings.TrimSpace(text); text == "" {
			return append(parts, u), nil
		}
		u.Join = true
		return append(parts, curated.TextPart(conv.User, text), u), nil
	case op == curated.OpRewrite:
		framed, err := f.rewriteText(text)
		if err != nil {
			return nil, err
		}
		parts := append(make([]curated.Part, 0, len(head)+2), head...)
		u.Join = true
		return append(parts, curated.TextPart(conv.User, framed), u), nil
	case f.reset == ResetWildChat:
		note := curated.TextPart(conv.System, WildChatIssuesNote(a.Issues))
		parts := make([]curated.Part, 0, 5)
		if c.System != "" {
			note.Join = true
			parts = append(parts, curated.SystemPart())
		}
		return append(parts, note,
			curated.TextPart(conv.User, WildChatResetText(a.Spec, a.Aligned)),
			curated.TextPart(conv.Assistant, WildChatAck),
			u), nil
	default:
		reset, err := f.resetText(a)
		if err != nil {
			return nil, err
		}
		parts := append(make([]curated.Part, 0, len(head)+2), head...)
		u.Join = true
		return append(parts, curated.TextPart(conv.User, reset), u), nil
	}
}
