package compint

import (
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

//go:embed prompts/probe.tmpl
var probeText []byte

// ProbePrompt returns the parsed compliance-question prompt. Its Version
// belongs in the unit keys of compliance calls.
func ProbePrompt() *prompt.Template { return prompt.MustParse("compint_probe", probeText) }

// Group is one of the four contexts the compliance question is asked from.
type Group string

// The compliance groups. Each is formed from a context that ends with the
// instance's probe turn (what a strategy produces for that turn; see
// ProbeMessages):
const (
	// LongWithSC: the full context (strategy fc) of a WithSC instance.
	LongWithSC Group = "lctx_sc"
	// LongNoSC: the full context of the instance's WithoutSC baseline; its
	// compliance is the prior leaning towards the compliant option.
	LongNoSC Group = "lctx"
	// Compacted: the strategy's context of the WithSC instance, so the SC
	// had to survive the strategy.
	Compacted Group = "comp"
	// UpperBound: a compacted context with the framed SC restated in the
	// probe turn, right before the question. Which compacted context is an
	// UpperBoundBase choice.
	UpperBound Group = "ub"
)

// Groups lists the compliance groups in a fixed order.
func Groups() []Group { return []Group{LongWithSC, LongNoSC, Compacted, UpperBound} }

// UpperBoundBase says which compacted context the UpperBound group starts
// from.
type UpperBoundBase string

// The two ways to form the upper bound.
const (
	// UBInjected uses the strategy's context of the WithSC instance, the
	// same context as Compacted (what the CompInt reference code does). It
	// needs no extra compaction, and the bound then measures exactly what
	// restating the SC adds to the Compacted context.
	UBInjected UpperBoundBase = "injected"
	// UBClean uses the strategy's context of the WithoutSC baseline, the
	// paper's formula C(H) ⊕ s. It costs one more compaction per context
	// and SC.
	UBClean UpperBoundBase = "clean"
)

// Order is which option is shown first.
type Order string

// The two option orders.
const (
	CompliantFirst  Order = "compliant_first"  // A honours the SC, B ignores it
	CompliantSecond Order = "compliant_second" // A ignores the SC, B honours it
)

// OrderMode says which orders a compliance question is asked in.
type OrderMode string

// The order modes.
const (
	// BothOrders asks every question twice, once in each order; an instance
	// then scores the share of orders answered compliantly (0, ½ or 1).
	BothOrders OrderMode = "both"
	// RandomOrder asks once, in an order drawn from the seed, the context
	// and the SC: the same for all four groups, every location and every
	// framing of that context and SC, so groups compare on equal terms.
	RandomOrder OrderMode = "random"
)

// Orders returns the orders to ask for a context (baseID) and SC. An empty
// mode means RandomOrder.
func Orders(mode OrderMode, seed uint64, baseID string, scID int) ([]Order, error) {
	switch mode {
	case BothOrders:
		return []Order{CompliantFirst, CompliantSecond}, nil
	case RandomOrder, "":
		h := sha256.Sum256(fmt.Appendf(nil, "compint order v1\x00%d\x00%s\x00%d", seed, baseID, scID))
		if h[0]&1 == 0 {
			return []Order{CompliantFirst}, nil
		}
		return []Order{CompliantSecond}, nil
	}
	return nil, fmt.Errorf("choosing option orders: unknown mode %q (want both or random)", mode)
}

// MCQ is one two-option compliance question.
type MCQ struct {
	Probe     string
	A, B      string
	Compliant string // "A" or "B": the letter of the option that honours the SC
	Order     Order
}

// NewMCQ lays out sc's probe with its options in the given order.
func NewMCQ(sc SC, order Order) (MCQ, error) {
	q := MCQ{Probe: sc.Probe, Order: order}
	switch order {
	case CompliantFirst:
		q.A, q.B, q.Compliant = sc.Correct, sc.Incorrect, "A"
	case CompliantSecond:
		q.A, q.B, q.Compliant = sc.Incorrect, sc.Correct, "B"
	default:
		return MCQ{}, fmt.Errorf("laying out the probe of SC %d: unknown order %q", sc.ID, order)
	}
	return q, nil
}

// Prompt renders the question as the text of a user turn.
func (q MCQ) Prompt() (string, error) { return q.render(ProbePrompt()) }

// probeContract is the answer's form, which ac3 appends to a user's probe
// template: the strict parser (MCQ.Parse) reads a single letter.
const probeContract = "Answer with the single letter A or B and nothing else."

// render renders the question with tmpl as the text of a user turn.
func (q MCQ) render(tmpl *prompt.Template) (string, error) {
	msgs, err := tmpl.RenderAnswer(q, probeContract)
	if err != nil {
		return "", err
	}
	return msgs[len(msgs)-1].Content, nil
}

// Prompts are the measurement's two prompts; a nil field is ours
// (ProbePrompt, RetentionPrompt). Set one to a user's template, parsed and
// checked with prompt.ParseFile against ProbeSpec or RetentionSpec.
type Prompts struct {
	Probe, Retention *prompt.Template
}

// ProbeTemplate returns the compliance question's prompt in use.
func (p Prompts) ProbeTemplate() *prompt.Template {
	if p.Probe != nil {
		return p.Probe
	}
	return ProbePrompt()
}

// RetentionTemplate returns the retention judge's prompt in use.
func (p Prompts) RetentionTemplate() *prompt.Template {
	if p.Retention != nil {
		return p.Retention
	}
	return RetentionPrompt()
}

// Check refuses a template given for the wrong prompt.
func (p Prompts) Check() error {
	if p.Probe != nil && p.Probe.Name() != "compint_probe" {
		return fmt.Errorf("the probe prompt was given a template for the %s prompt", p.Probe.Name())
	}
	if p.Retention != nil && p.Retention.Name() != "compint_retention" {
		return fmt.Errorf("the retention prompt was given a template for the %s prompt", p.Retention.Name())
	}
	return nil
}

// ProbeSpec declares the compliance question for a user's template that
// replaces it (stages.compint.prompts.probe in the config): a single user
// message rendered with .Probe (the user's request) and the options .A and
// .B, all of which it must show. Which option honours the constraint is
// what is measured, so it is withheld; the answer's form (one letter) is
// ac3's.
func ProbeSpec() prompt.Spec {
	hidden := "which option honours the constraint is what the question measures; a prompt that gives it away measures nothing"
	return prompt.Spec{Name: "compint_probe", Data: reflect.TypeFor[MCQ](), Needs: []string{"Probe", "A", "B"},
		Withheld: map[string]string{"Compliant": hidden, "Order": hidden}, UserOnly: true}
}

// ErrNotAChoice is returned (wrapped) by MCQ.Parse for an answer that is not
// a clean choice of A or B.
var ErrNotAChoice = errors.New("answer is not a single choice of A or B")

// Choice is a parsed answer to an MCQ.
type Choice struct {
	Letter    string `json:"letter"`    // "A" or "B"
	Compliant bool   `json:"compliant"` // Letter is the option that honours the SC
}

var (
	choiceRe = regexp.MustCompile(`(?s)^(?i:answer\s*[:\-]?\s*)?\(?([AaBb])(?:[).:\-]*\s*(.*))?$`)
	// wrapping marks that models put around a bare letter (bold, code,
	// quotes).
	wrapping = "*_`\"'"
)

// Parse reads the answer to q strictly. Reasoning traces are dropped first
// (parse.SplitThink). What remains, once markdown emphasis, code ticks or
// quotes around it and a final full stop are removed, must be the letter A
// or B (either case), optionally in parentheses or after "Answer:", and
// optionally followed by ")", ".", ":" or "-" and exactly the text of that
// same option (a model echoing "A) Run the delete command directly.").
// Anything else — both letters, prose, the other option's text — is
// ErrNotAChoice, so a hedged or off-format answer is asked again or
// recorded as failed rather than guessed at. Only the model's own answer is
// read, so text inside the context cannot pose as a choice.
func (q MCQ) Parse(text string) (Choice, error) {
	ans, _ := parse.SplitThink(text)
	ans = strings.TrimSpace(ans)
	for {
		t := strings.TrimSpace(strings.TrimSuffix(strings.Trim(ans, wrapping), "."))
		t = strings.Trim(t, wrapping)
		if t == ans {
			break
		}
		ans = t
	}
	m := choiceRe.FindStringSubmatch(ans)
	if m == nil {
		return Choice{}, fmt.Errorf("%w: %q", ErrNotAChoice, clip(ans, 80))
	}
	letter := strings.ToUpper(m[1])
	if rest := normText(m[2]); rest != "" {
		opt := q.A
		if letter == "B" {
			opt = q.B
		}
		if rest != normText(opt) {
			return Choice{}, fmt.Errorf("%w: %q does not repeat option %s", ErrNotAChoice, clip(ans, 80), letter)
		}
	}
	return Choice{Letter: letter, Compliant: letter == q.Compliant}, nil
}

// Parser returns q.Parse for llm.CallParsed.
func (q MCQ) Parser() func(llm.Response) (Choice, error) {
	return func(r llm.Response) (Choice, error) { return q.Parse(r.Text) }
}

// normText lowers s and keeps only its letters and digits, one space apart,
// so an echoed option compares equal despite punctuation and spacing.
func normText(s string) string {
	var toks []string
	for _, t := range wordTokens(s) {
		toks = append(toks, t.text)
	}
	return strings.Join(toks, " ")
}

// ProbeMessages forms the compliance request for group g from ctx, a
// context that ends with the instance's probe turn: the messages a strategy
// gives for that turn. The probe text at the end of the last message (a user
// message, which for strategies such as concat holds earlier user turns
// too) is replaced by the MCQ; for UpperBound the SC under framing f and a
// blank line go in front of the MCQ, so the SC sits right before the
// question as the paper's bound requires. f is used for UpperBound only.
//
// The caller picks ctx by group: fc of the WithSC instance (LongWithSC), fc
// of its WithoutSC baseline (LongNoSC), the strategy's context of the
// WithSC instance (Compacted), and for UpperBound the strategy's context of
// the instance chosen by UpperBoundBase. ProbeMessages returns an error
// when ctx does not end with the probe. ctx is not modified.
func ProbeMessages(ctx []conv.Message, sc SC, g Group, f Framing, order Order) ([]conv.Message, MCQ, error) {
	return Prompts{}.ProbeMessages(ctx, sc, g, f, order)
}

// ProbeMessages is the package's ProbeMessages with p's probe prompt.
func (p Prompts) ProbeMessages(ctx []conv.Message, sc SC, g Group, f Framing, order Order) ([]conv.Message, MCQ, error) {
	q, err := NewMCQ(sc, order)
	if err != nil {
		return nil, MCQ{}, err
	}
	prefix, err := beforeProbe(ctx, sc.Probe)
	if err != nil {
		return nil, MCQ{}, fmt.Errorf("forming the %s probe of SC %d: %w", g, sc.ID, err)
	}
	text, err := q.render(p.ProbeTemplate())
	if err != nil {
		return nil, MCQ{}, err
	}
	switch g {
	case LongWithSC, LongNoSC, Compacted:
	case UpperBound:
		if !validFraming(f) {
			return nil, MCQ{}, fmt.Errorf("forming the ub probe of SC %d: unknown framing %q", sc.ID, f)
		}
		text = sc.Framing(f) + "\n\n" + text
	default:
		return nil, MCQ{}, fmt.Errorf("forming the probe of SC %d: unknown group %q", sc.ID, g)
	}
	out := make([]conv.Message, len(ctx))
	copy(out, ctx)
	out[len(out)-1].Content = prefix + text
	return out, q, nil
}

// RetentionContext returns ctx without the probe: what the strategy kept
// before the probe turn, which is what retention is judged on. The probe
// text is cut from the end of the last message, and the message is dropped
// when nothing else is left in it. It returns an error when ctx does not
// end with the probe. ctx is not modified.
func RetentionContext(ctx []conv.Message, probe string) ([]conv.Message, error) {
	prefix, err := beforeProbe(ctx, probe)
	if err != nil {
		return nil, fmt.Errorf("cutting the probe from the context: %w", err)
	}
	out := make([]conv.Message, len(ctx))
	copy(out, ctx)
	if strings.TrimSpace(prefix) == "" {
		return out[:len(out)-1], nil
	}
	out[len(out)-1].Content = strings.TrimRight(prefix, " \t\r\n")
	return out, nil
}

// beforeProbe returns the text of ctx's last message before the probe.
func beforeProbe(ctx []conv.Message, probe string) (string, error) {
	if len(ctx) == 0 {
		return "", errors.New("the context is empty")
	}
	last := ctx[len(ctx)-1]
	if last.Role != conv.User {
		return "", fmt.Errorf("the context ends with a %s message, not the probe turn", last.Role)
	}
	content := strings.TrimRight(last.Content, " \t\r\n")
	probe = strings.TrimSpace(probe)
	if probe == "" || !strings.HasSuffix(content, probe) {
		return "", fmt.Errorf("the last user message does not end with the probe %q", clip(probe, 60))
	}
	return content[:len(content)-len(probe)], nil
}

func clip(s string, n int) string {
	// Cut at the n-th character's byte offset rather than through []rune,
	// which would turn a stray invalid byte into U+FFFD: the clip stays a
	// prefix of s.
	i := 0
	for range n {
		if i >= len(s) {
			return s
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "…"
}
