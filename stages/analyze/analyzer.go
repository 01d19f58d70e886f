package analyze

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

//go:embed prompts/*.tmpl
var promptFiles embed.FS

// None is what the issues field holds when the evaluation found nothing
// wrong. Operators that remove content (reset, rewrite) act only when the
// issues are something else.
const None = "None"

// DefaultRole is the model role the analyzer's calls use.
const DefaultRole = "analyzer"

// DefaultRetries is how many times a malformed answer is asked again.
const DefaultRetries = 2

// Ablation names a deliberately weakened analyzer, for reproducing the
// paper's ablations. The zero value is the real analyzer.
type Ablation string

const (
	// NoAblation is the AC3 analyzer as designed: step 1 sees U_t only.
	NoAblation Ablation = ""
	// AblationContagiousExtractor lets step 1 see the whole conversation,
	// assistant turns included (told only to base the specification on the
	// user's messages), so the contagion result can be reproduced.
	AblationContagiousExtractor Ablation = "contagious-extractor"
	// AblationSinglePass also merges the two steps into one call over the
	// whole conversation.
	AblationSinglePass Ablation = "single-pass"
)

// Ablations lists the valid non-default ablations.
func Ablations() []Ablation { return []Ablation{AblationContagiousExtractor, AblationSinglePass} }

// ParseAblation maps a name ("" or "none" for the real analyzer) to an
// Ablation.
func ParseAblation(s string) (Ablation, error) {
	switch a := Ablation(strings.TrimSpace(s)); a {
	case "", "none":
		return NoAblation, nil
	case AblationContagiousExtractor, AblationSinglePass:
		return a, nil
	}
	return "", fmt.Errorf("parsing ablation %q: valid: none, %s, %s", s, AblationContagiousExtractor, AblationSinglePass)
}

// Label is how the ablation is shown in variant versions and outputs:
// "" for none, else "ABLATION:<name>".
func (a Ablation) Label() string {
	if a == NoAblation {
		return ""
	}
	return "ABLATION:" + string(a)
}

// Analysis is the result of the two steps for one turn.
type Analysis struct {
	// Spec is the consolidated task specification (step 1).
	Spec string `json:"spec"`
	// Aligned is what the assistant did that fits Spec (step 2).
	Aligned string `json:"aligned"`
	// Issues is what contradicts Spec or rests on unfounded assumptions, or
	// None.
	Issues string `json:"issues"`
	// Ablation is set ("ABLATION:…") when a weakened analyzer produced it.
	Ablation string `json:"ablation,omitempty"`
}

// HasIssues reports whether Issues names a problem. "None" in any case,
// with surrounding punctuation or markup, and an empty section both mean no
// issues: a model that writes "**None.**" has said the same thing. So does
// a per-requirement list in which every line says None ("1. None",
// "Requirement 2: none"), which step 2's requirement-by-requirement review
// sometimes gives instead of the single word it is asked for.
func (a Analysis) HasIssues() bool { return !isNone(a.Issues) }

func isNone(s string) bool {
	if bareNone(s) {
		return true
	}
	lines := 0
	for line := range strings.Lines(s) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !bareNone(dropItemLabel(line)) {
			return false
		}
		lines++
	}
	return lines > 0
}

// bareNone reports whether s is None or nothing, give or take markup.
func bareNone(s string) bool {
	s = strings.Trim(strings.TrimSpace(s), noneTrim)
	return s == "" || strings.EqualFold(s, None)
}

const noneTrim = " \t\r\n*_`.!-:\"'"

// dropItemLabel removes what labels one line of a per-requirement list: a
// bullet, a number ("1.", "(2)", "3)") and a word naming the item
// ("Item", "Requirement", "Deliverable", "#") up to a colon or dash. Only
// labels are dropped, so "None" must be all that is left for the line to
// say nothing; "1. None of the tests pass" is a finding.
func dropItemLabel(line string) string {
	s := strings.TrimLeft(strings.TrimSpace(line), "-*•+ \t")
	for _, w := range []string{"requirement", "deliverable", "item", "#"} {
		// A word label must end there: "Requirementnone" is one word,
		// not a label and None.
		if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) && (w == "#" || !startsWithLetter(s[len(w):])) {
			s = s[len(w):]
			break
		}
	}
	s = strings.TrimLeft(s, " \t(#")
	s = strings.TrimLeft(s, "0123456789")
	return strings.TrimLeft(s, ").:-–— \t")
}

func startsWithLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r)
}

// Usage is what a group of calls took. Cached calls were answered from the
// run's cache and cost nothing.
type Usage struct {
	Calls            int     `json:"calls"`
	Cached           int     `json:"cached,omitempty"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	// ListUSD is what the answers used cost at the configured price of the
	// role's model, whichever pass paid for them (this one, or an earlier
	// one cut short, whose answer came from the cache) and in whichever
	// mode (a batch pays a share of it). Unlike CostUSD, which is what this
	// pass paid, it depends only on the answers, so a report can show it.
	// Listed counts the calls it prices: all of them, but none in records
	// from before it was kept.
	ListUSD float64 `json:"list_usd,omitempty"`
	Listed  int     `json:"listed,omitempty"`
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.Calls += v.Calls
	u.Cached += v.Cached
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.CostUSD += v.CostUSD
	u.ListUSD += v.ListUSD
	u.Listed += v.Listed
}

// addResponse counts one answer; price is the configured price of the
// role's model (nil when it cannot be resolved: the call is not Listed).
func (u *Usage) addResponse(r llm.Response, price *llm.Price) {
	u.Calls++
	if r.FromCache {
		u.Cached++
	}
	u.PromptTokens += r.Usage.Prompt
	u.CompletionTokens += r.Usage.Completion
	u.CostUSD += r.CostUSD
	if price != nil {
		// The cached answer keeps the usage the server reported when it
		// was paid for, so this is the same on every pass. Tokens the
		// endpoint's prompt cache served are priced in full: how many it
		// served depends on what else was sent around the call (online or
		// in a batch), not on the answer.
		u.ListUSD += price.Cost(llm.Usage{Prompt: r.Usage.Prompt, Completion: r.Usage.Completion})
		u.Listed++
	}
}

// Options configure an Analyzer. The zero value gives the defaults.
type Options struct {
	// Role is the model role of every call (default DefaultRole).
	Role string
	// Retries is how many more times a malformed answer is asked for
	// (default DefaultRetries; negative means none).
	Retries int
	// Ablation selects a weakened analyzer; see Ablation.
	Ablation Ablation
	// Prompts replace shipped prompts by name (spec, evaluate, rewrite,
	// …; see PromptSpecs): users' templates, parsed and checked with
	// prompt.ParseFile against the matching Spec. Their versions go into
	// the analyzer's, so a replaced prompt never reuses units or answers.
	Prompts map[string]*prompt.Template
}

// Analyzer runs the AC3 analysis and the other AC3 model calls through one
// client. It is safe for concurrent use.
type Analyzer struct {
	client *llm.Client
	opts   Options
	p      prompts
	out    parse.Output // how the role's model is asked for answers
}

type prompts struct {
	spec, specContagious, evaluate, single, rewrite, rewritePaper, rewriteEarlier, summary, summaryPaper, reflect, unify *prompt.Template
}

// byName is every prompt's slot, by the prompt's name.
func (p *prompts) byName() map[string]**prompt.Template {
	return map[string]**prompt.Template{
		"spec": &p.spec, "spec_contagious": &p.specContagious, "evaluate": &p.evaluate, "single_pass": &p.single,
		"rewrite": &p.rewrite, "rewrite_paper": &p.rewritePaper, "rewrite_earlier": &p.rewriteEarlier, "summary": &p.summary, "summary_paper": &p.summaryPaper, "reflect": &p.reflect, "unify": &p.unify,
	}
}

// loadPrompts parses the shipped prompts, then puts each of replace in
// place of the shipped prompt of its name.
func loadPrompts(replace map[string]*prompt.Template) (prompts, error) {
	var p prompts
	slots := p.byName()
	for name, dst := range slots {
		b, err := promptFiles.ReadFile("prompts/" + name + ".tmpl")
		if err != nil {
			return p, fmt.Errorf("loading prompt %s: %w", name, err)
		}
		t, err := prompt.Parse(name, b)
		if err != nil {
			return p, err
		}
		*dst = t
	}
	for _, name := range slices.Sorted(maps.Keys(replace)) {
		t, dst := replace[name], slots[name]
		switch {
		case dst == nil:
			return p, fmt.Errorf("replacing analyzer prompt %q: no such prompt (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(slots)), ", "))
		case t == nil || t.Name() != name:
			return p, fmt.Errorf("replacing analyzer prompt %q: the template given was not checked as one", name)
		}
		*dst = t
	}
	return p, nil
}

// New returns an analyzer calling client. client may be nil for an analyzer
// that only reports versions and renders prompts (dry runs, tests); its calls
// then fail.
func New(client *llm.Client, opts Options) (*Analyzer, error) {
	if opts.Role == "" {
		opts.Role = DefaultRole
	}
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	} else if opts.Retries < 0 {
		opts.Retries = 0
	}
	if _, err := ParseAblation(string(opts.Ablation)); err != nil {
		return nil, err
	}
	p, err := loadPrompts(opts.Prompts)
	if err != nil {
		return nil, err
	}
	return &Analyzer{client: client, opts: opts, p: p, out: client.Output(opts.Role)}, nil
}

// Prompts returns the prompts the analyzer renders, shipped or replaced
// (Options.Prompts), ordered by name.
func (a *Analyzer) Prompts() []*prompt.Template {
	slots := a.p.byName()
	out := make([]*prompt.Template, 0, len(slots))
	for _, name := range slices.Sorted(maps.Keys(slots)) {
		out = append(out, *slots[name])
	}
	return out
}

// Client returns the client the analyzer calls (nil for one that only
// reports versions).
func (a *Analyzer) Client() *llm.Client { return a.client }

// Role returns the model role of the analyzer's calls.
func (a *Analyzer) Role() string { return a.opts.Role }

// Ablation returns the analyzer's ablation (NoAblation normally).
func (a *Analyzer) Ablation() Ablation { return a.opts.Ablation }

// Version identifies everything that changes an analysis: the prompts of
// the steps in use, the role and the ablation, which is spelled out so that
// no ablated result can pass for the real analyzer's.
func (a *Analyzer) Version() string {
	var parts []string
	switch a.opts.Ablation {
	case AblationContagiousExtractor:
		parts = []string{a.p.specContagious.Version(), a.p.evaluate.Version()}
	case AblationSinglePass:
		parts = []string{a.p.single.Version()}
	default:
		parts = []string{a.p.spec.Version(), a.p.evaluate.Version()}
	}
	v := "analyzer(" + strings.Join(parts, ",") + ";role=" + a.opts.Role + a.outputSuffix() + ")"
	if l := a.opts.Ablation.Label(); l != "" {
		v = l + ";" + v
	}
	return v
}

// SummaryVersion is the version of the summary prompt and role.
func (a *Analyzer) SummaryVersion() string {
	return a.p.summary.Version() + ";role=" + a.opts.Role + a.outputSuffix()
}

// SummaryPaperVersion is the version of the paper-form summary prompt
// (SummarizePaper) and role; its answer is plain text, whatever the role's
// output form.
func (a *Analyzer) SummaryPaperVersion() string {
	return a.p.summaryPaper.Version() + ";role=" + a.opts.Role
}

// MemoryVersion is the version of the reflection and unify prompts.
func (a *Analyzer) MemoryVersion() string {
	return a.p.reflect.Version() + "," + a.p.unify.Version() + a.outputSuffix()
}

// Failure reports whether err means "this unit failed" (a malformed answer
// after every retry, or a request the endpoint rejected) rather than "stop
// the run", and returns the raw answer to keep when there is one.
func Failure(err error) (raw string, ok bool) { return llm.UnitFailure(err) }

// call renders tmpl with data, sends it and reads the answer's fields as
// ans says (tagged sections, or one JSON object under ans's strict schema).
// The usage of every attempt, retries included, goes into u.
func (a *Analyzer) call(ctx context.Context, stage string, tmpl *prompt.Template, data any, ans parse.Answer, reroll int, u *Usage) (map[string]string, error) {
	if a.client == nil {
		return nil, errors.New("calling the analyzer: no model client")
	}
	msgs, err := tmpl.RenderAnswer(data, contract(ans))
	if err != nil {
		return nil, err
	}
	req := llm.Request{Role: a.opts.Role, Stage: stage, Messages: msgs, Reroll: reroll}
	if ans.JSON() {
		req.Schema = &llm.Schema{Name: ans.Form.Name, Schema: ans.Form.Schema()}
	}
	var price *llm.Price
	if ep, err := a.client.Endpoint(a.opts.Role); err == nil {
		price = &ep.Price
	}
	out, _, err := llm.CallParsed(ctx, a.client, req, a.opts.Retries, func(r llm.Response) (map[string]string, error) {
		u.addResponse(r, price)
		return ans.Parse(r.Text)
	})
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", tmpl.Name(), err)
	}
	return out, nil
}

// Specify is step 1: the consolidated task specification from U_t. It takes
// a conv.UserView, which holds the system message and user messages only, so
// no assistant or tool text can reach this call. reroll offsets the re-ask
// counter (see pipeline.Task.Retry).
func (a *Analyzer) Specify(ctx context.Context, u conv.UserView, reroll int) (string, Usage, error) {
	var use Usage
	users := u.Users()
	tg := parse.NewTagger(append([]string{u.System()}, users...)...)
	ans := a.answer(specForm(), tg)
	out, err := a.call(ctx, "analyze", a.p.spec, newSpecData(u, ans), ans, reroll, &use)
	if err != nil {
		return "", use, fmt.Errorf("extracting the specification: %w", err)
	}
	return out["spec"], use, nil
}

// specifyContagious is the ablated step 1 that sees all of C_t. It exists
// only behind AblationContagiousExtractor.
func (a *Analyzer) specifyContagious(ctx context.Context, ct []conv.Message, reroll int) (string, Usage, error) {
	var use Usage
	out, err := a.transcriptCall(ctx, ct, a.p.specContagious, specForm(), reroll, &use)
	if err != nil {
		return "", use, fmt.Errorf("extracting the specification (ablation): %w", err)
	}
	return out["spec"], use, nil
}

// Evaluate is step 2: what in C_t fits spec (aligned) and what does not
// (issues, or None). cheatsheet is the memory's text, "" when memory is off.
func (a *Analyzer) Evaluate(ctx context.Context, spec string, ct []conv.Message, cheatsheet string, reroll int) (aligned, issues string, use Usage, err error) {
	tr := Transcript(ct)
	tg := parse.NewTagger(spec, tr, cheatsheet)
	ans := a.answer(evaluateForm(), tg)
	out, err := a.call(ctx, "analyze", a.p.evaluate, evaluateData{spec, tr, cheatsheet, ans}, ans, reroll, &use)
	if err != nil {
		return "", "", use, fmt.Errorf("evaluating the approach: %w", err)
	}
	return out["aligned"], normalizeIssues(out["issues"]), use, nil
}

// normalizeIssues writes every way of saying "nothing" as None, so stored
// analyses and reports agree.
func normalizeIssues(s string) string {
	if isNone(s) {
		return None
	}
	return s
}

// Analyze runs the analysis of turn t of c: both steps (or the ablated
// variant the analyzer was built with). It returns the usage of every call,
// including the failed attempts, also when it fails.
func (a *Analyzer) Analyze(ctx context.Context, c *conv.Conversation, t int, cheatsheet string, reroll int) (Analysis, Usage, error) {
	var use Usage
	ct, ok := c.ContextBefore(t)
	if !ok {
		return Analysis{}, use, fmt.Errorf("analyzing turn %d of %s: the conversation has %d user turns", t, c.ID, c.UserTurns())
	}
	an := Analysis{Ablation: a.opts.Ablation.Label()}
	var (
		u   Usage
		err error
	)
	switch a.opts.Ablation {
	case AblationSinglePass:
		an, u, err = a.singlePass(ctx, ct, reroll)
		use.Add(u)
		return an, use, err
	case AblationContagiousExtractor:
		an.Spec, u, err = a.specifyContagious(ctx, ct, reroll)
	default:
		an.Spec, u, err = a.Specify(ctx, conv.NewUserView(c, t), reroll)
	}
	use.Add(u)
	if err != nil {
		return an, use, err
	}
	an.Aligned, an.Issues, u, err = a.Evaluate(ctx, an.Spec, ct, cheatsheet, reroll)
	use.Add(u)
	return an, use, err
}

// FirstStep asks the part of the analysis of turn t of c that reads no
// cheatsheet: step 1 (the ablated one under AblationContagiousExtractor),
// or the single call of AblationSinglePass, which reads none at all. Its
// answers are those Analyze gets, so a batch can carry them before the
// cheatsheet step 2 reads is known (the online memory's chain). It returns
// the call's error: llm.ErrDeferred while it waits for a batch.
func (a *Analyzer) FirstStep(ctx context.Context, c *conv.Conversation, t int, reroll int) (Usage, error) {
	ct, ok := c.ContextBefore(t)
	if !ok {
		return Usage{}, fmt.Errorf("analyzing turn %d of %s: the conversation has %d user turns", t, c.ID, c.UserTurns())
	}
	var (
		use Usage
		err error
	)
	switch a.opts.Ablation {
	case AblationSinglePass:
		_, use, err = a.singlePass(ctx, ct, reroll)
	case AblationContagiousExtractor:
		_, use, err = a.specifyContagious(ctx, ct, reroll)
	default:
		_, use, err = a.Specify(ctx, conv.NewUserView(c, t), reroll)
	}
	return use, err
}

// Depth is how many calls of the analysis follow one another: 2, or 1 for
// AblationSinglePass.
func (a *Analyzer) Depth() int {
	if a.opts.Ablation == AblationSinglePass {
		return 1
	}
	return 2
}

func (a *Analyzer) singlePass(ctx context.Context, ct []conv.Message, reroll int) (Analysis, Usage, error) {
	var use Usage
	out, err := a.transcriptCall(ctx, ct, a.p.single, singlePassForm(), reroll, &use)
	if err != nil {
		return Analysis{}, use, fmt.Errorf("analyzing in one pass (ablation): %w", err)
	}
	return Analysis{Spec: out["spec"], Aligned: out["aligned"], Issues: normalizeIssues(out["issues"]), Ablation: a.opts.Ablation.Label()}, use, nil
}

// transcriptCall asks tmpl for form about the whole of ct, shown as one
// transcript: the call of both ablations that let the model read all of C_t.
func (a *Analyzer) transcriptCall(ctx context.Context, ct []conv.Message, tmpl *prompt.Template, form parse.Sections, reroll int, use *Usage) (map[string]string, error) {
	tr := Transcript(ct)
	ans := a.answer(form, parse.NewTagger(tr))
	return a.call(ctx, "analyze", tmpl, transcriptData{tr, ans}, ans, reroll, use)
}

// Transcript renders messages for a prompt: each message in a <message>
// element carrying its position and role, so the model can tell who said
// what even when a message quotes another.
func Transcript(msgs []conv.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "<message n=\"%d\" role=%q>\n%s\n</message>\n", i+1, m.Role, m.Content)
	}
	return strings.TrimRight(b.String(), "\n")
}
