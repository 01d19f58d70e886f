package analyze

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

// RewriteVariant chooses the prompt of the rewrite operator's call.
type RewriteVariant string

const (
	// RewriteAC3 is our prompt (the default; "" means it too): the model
	// writes a neutral briefing with a prescribed content (the current
	// request with every concrete detail, the work worth keeping, nothing
	// the issues rule out, no answer to the latest message), which the
	// operator frames as a rewritten history.
	RewriteAC3 RewriteVariant = "ac3"
	// RewritePaper is the rewrite as Ho et al. describe it (AC3, Sections
	// 3.2 and C.2, the later of the two rewrite prompts): the reviewer's
	// notes are the model's main source, the form of the new context
	// (structure, length, sections) is left to the model, it may reason in
	// plain text first, and only the context it returns in its own tagged
	// section reaches the respondent, with no framing of ours around it.
	// The prompt is in our words.
	RewritePaper RewriteVariant = "paper"
	// RewriteEarlier is the paper's earlier rewrite prompt (App. C, Prompt
	// 3, which it gives for Rewrite on GPT-5-mini's WildChat runs and LiC
	// ablations): a numbered task specification with every parameter and a
	// listing of the verified work, in two sections, which reach the
	// respondent as one message with no framing of ours. In our words.
	RewriteEarlier RewriteVariant = "earlier"
)

// RewriteVariants lists the valid variants, the default first.
func RewriteVariants() []RewriteVariant {
	return []RewriteVariant{RewriteAC3, RewritePaper, RewriteEarlier}
}

// ParseRewriteVariant maps a name ("" for the default) to a RewriteVariant.
func ParseRewriteVariant(s string) (RewriteVariant, error) {
	switch v := RewriteVariant(strings.TrimSpace(s)); v {
	case "", RewriteAC3:
		return RewriteAC3, nil
	case RewritePaper, RewriteEarlier:
		return v, nil
	}
	return "", fmt.Errorf("parsing rewrite variant %q: valid: %s, %s, %s", s, RewriteAC3, RewritePaper, RewriteEarlier)
}

// rewritePrompt returns v's prompt, or an error for an unknown variant.
func (a *Analyzer) rewritePrompt(v RewriteVariant) (*prompt.Template, error) {
	switch v {
	case "", RewriteAC3:
		return a.p.rewrite, nil
	case RewritePaper:
		return a.p.rewritePaper, nil
	case RewriteEarlier:
		return a.p.rewriteEarlier, nil
	}
	_, err := ParseRewriteVariant(string(v))
	return nil, err
}

// RewriteVersion is the version of variant v's rewrite prompt; it goes into
// the rewrite operator's version, so switching variants changes unit keys.
// An unknown variant gives a version naming it, which no stored unit has.
func (a *Analyzer) RewriteVersion(v RewriteVariant) string {
	t, err := a.rewritePrompt(v)
	if err != nil {
		return "rewrite(unknown variant " + strconv.Quote(string(v)) + ")"
	}
	return t.Version() + a.outputSuffix()
}

// Rewrite is the rewrite operator's extra call: a replacement for the
// conversation before u_t, written from the analysis and C_t with variant
// v's prompt. Only the text inside the answer's nonce-tagged context section
// is returned; anything around it (preambles, reasoning in plain text, a
// drafted answer) is dropped, and a section whose tag lacks the nonce (text
// pasted into the conversation and echoed back) is not read. The shipped
// prompts hold every instruction in the system message and show C_t right
// after it, oldest message first, with the analysis and the nonce-tagged
// form last, so a later turn's rewrite begins with an earlier one's whole
// conversation and a provider's prompt cache serves it.
func (a *Analyzer) Rewrite(ctx context.Context, v RewriteVariant, an Analysis, ct []conv.Message, reroll int) (string, Usage, error) {
	var use Usage
	tmpl, err := a.rewritePrompt(v)
	if err != nil {
		return "", use, fmt.Errorf("rewriting the context: %w", err)
	}
	tr := Transcript(ct)
	tg := parse.NewTagger(tr, an.Spec, an.Aligned, an.Issues)
	form := contextForm()
	if v == RewriteEarlier {
		form = earlierForm()
	}
	ans := a.answer(form, tg)
	out, err := a.call(ctx, "curate", tmpl, rewriteData{tr, an.Spec, an.Aligned, an.Issues, ans}, ans, reroll, &use)
	if err != nil {
		return "", use, fmt.Errorf("rewriting the context: %w", err)
	}
	if v == RewriteEarlier {
		return EarlierContext(out["task_spec"], out["verified_work"]), use, nil
	}
	return out["context"], use, nil
}

// EarlierContext is the message the earlier rewrite's two sections make:
// the task specification, then the verified work, each under its heading.
func EarlierContext(spec, work string) string {
	return "Task specification:\n" + strings.TrimSpace(spec) + "\n\nVerified work:\n" + strings.TrimSpace(work)
}

// Summarize is the sum strategy's call: one sentence for one assistant
// reply. Its request holds only the reply and the user message it answers,
// never the turn being curated, so every later turn of the conversation
// makes the identical request and the run's cache answers it once. Its
// instructions are all in the system message, the only part two summary
// requests share.
func (a *Analyzer) Summarize(ctx context.Context, user, reply string, reroll int) (string, Usage, error) {
	var use Usage
	tg := parse.NewTagger(user, reply)
	ans := a.answer(summaryForm(), tg)
	out, err := a.call(ctx, "curate", a.p.summary, summaryData{user, reply, ans}, ans, reroll, &use)
	if err != nil {
		return "", use, fmt.Errorf("summarizing a reply: %w", err)
	}
	return strings.Join(strings.Fields(out["summary"]), " "), use, nil
}

// ErrEmptySummary is a paper-form summary answer with no text.
var ErrEmptySummary = errors.New("the summary is empty")

// SummarizePaper is Summarize in Huang et al.'s form (A.3): one user
// message asking for exactly one sentence about the reply alone, and the
// whole answer (reasoning removed, whitespace collapsed) is the summary. An
// empty answer is asked again, then fails the unit.
func (a *Analyzer) SummarizePaper(ctx context.Context, reply string, reroll int) (string, Usage, error) {
	var use Usage
	if a.client == nil {
		return "", use, errors.New("summarizing a reply: no model client")
	}
	msgs, err := a.p.summaryPaper.Render(summaryData{Reply: reply})
	if err != nil {
		return "", use, fmt.Errorf("summarizing a reply: %w", err)
	}
	var price *llm.Price
	if ep, err := a.client.Endpoint(a.opts.Role); err == nil {
		price = &ep.Price
	}
	req := llm.Request{Role: a.opts.Role, Stage: "curate", Messages: msgs, Reroll: reroll}
	text, _, err := llm.CallParsed(ctx, a.client, req, a.opts.Retries, func(r llm.Response) (string, error) {
		use.addResponse(r, price)
		t := strings.Join(strings.Fields(r.Text), " ")
		if t == "" {
			return "", ErrEmptySummary
		}
		return t, nil
	})
	if err != nil {
		return "", use, fmt.Errorf("summarizing a reply: %w", err)
	}
	return text, use, nil
}

// TurnAnalysis is one analyzed turn of a conversation, as the memory's
// reflection reads it.
type TurnAnalysis struct {
	Turn int
	Analysis
}

// Step is one turn of a trajectory as reflection sees it: the user's
// message, the analysis made before it was answered, the operator's
// decision, what came of the answer, and the assistant's logged reply.
type Step struct {
	TurnAnalysis
	User  string // u_t
	Reply string // the logged a_t ("" when the conversation has none)
	// Edit is the operator's decision at this turn: true when it replaced
	// the history (EDIT), false when it left it (NO EDIT).
	Edit bool
	// Outcome says how the answer given at this turn fared, e.g. a judge's
	// verdict; "" when not known.
	Outcome string
}

// Trajectory is one conversation's steps in turn order and, when known,
// its outcome as a whole (a summary of the judge's verdicts, a grader's
// score).
type Trajectory struct {
	Steps   []Step
	Outcome string
}

// Steps builds the steps of conversation c from its turn analyses: the
// user message and logged reply of each turn, cut to MaxStepChars, and the
// decision edit gives (nil: NO EDIT everywhere). Outcomes are left empty.
func Steps(c *conv.Conversation, turns []TurnAnalysis, edit func(TurnAnalysis) bool) []Step {
	byTurn := map[int]conv.Turn{}
	for _, tr := range c.Turns() {
		byTurn[tr.Index] = tr
	}
	out := make([]Step, 0, len(turns))
	for _, ta := range turns {
		st := Step{TurnAnalysis: ta}
		if tr, ok := byTurn[ta.Turn]; ok {
			st.User = clip(c.Messages[tr.User].Content, MaxStepChars)
			if tr.Reply >= 0 {
				st.Reply = clip(c.Messages[tr.Reply].Content, MaxStepChars)
			}
		}
		if edit != nil {
			st.Edit = edit(ta)
		}
		out = append(out, st)
	}
	return out
}

// MaxStepChars bounds each message a reflection is shown, so one long
// paste cannot crowd out the rest of the trajectory.
const MaxStepChars = 4000

// clip keeps the first n runes of s and says how much it cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("\n[... %d more characters not shown]", len(r)-n)
}

// Reflect turns one conversation's trajectory into transferable takeaways.
// cheatsheet is the current one for an update in place (the online
// regime), or "" for an individual reflection (the offline regime, which
// consolidates all of them at once; see Consolidate).
func (a *Analyzer) Reflect(ctx context.Context, tr Trajectory, cheatsheet string) (string, Usage, error) {
	var use Usage
	parts := []string{cheatsheet, tr.Outcome}
	for _, t := range tr.Steps {
		parts = append(parts, t.Spec, t.Aligned, t.Issues, t.User, t.Reply, t.Outcome)
	}
	tg := parse.NewTagger(parts...)
	ans := a.answer(takeawaysForm(), tg)
	out, err := a.call(ctx, "memory", a.p.reflect, reflectData{tr.Steps, tr.Outcome, cheatsheet, ans}, ans, 0, &use)
	if err != nil {
		return "", use, fmt.Errorf("reflecting on a conversation: %w", err)
	}
	return out["takeaways"], use, nil
}

// MaxCheatsheetWords caps the memory cheatsheet.
const MaxCheatsheetWords = 1500

// Unify merges takeaways into the cheatsheet and returns the new one,
// capped at MaxCheatsheetWords words (a longer answer is cut at the cap, so
// the prompt given to step 2 stays bounded whatever the model writes).
func (a *Analyzer) Unify(ctx context.Context, cheatsheet, takeaways string) (string, Usage, error) {
	var use Usage
	tg := parse.NewTagger(cheatsheet, takeaways)
	ans := a.answer(cheatsheetForm(), tg)
	out, err := a.call(ctx, "memory", a.p.unify, unifyData{cheatsheet, takeaways, MaxCheatsheetWords, ans}, ans, 0, &use)
	if err != nil {
		return "", use, fmt.Errorf("unifying the cheatsheet: %w", err)
	}
	return CapWords(out["cheatsheet"], MaxCheatsheetWords), use, nil
}

// CapWords keeps the first n words of s, keeping its line breaks.
func CapWords(s string, n int) string {
	count := 0
	in := false
	for i, r := range s {
		space := r == ' ' || r == '\n' || r == '\t' || r == '\r'
		if !space && !in {
			count++
			if count > n {
				return strings.TrimSpace(s[:i])
			}
		}
		in = !space
	}
	return strings.TrimSpace(s)
}
