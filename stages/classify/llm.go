package classify

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

//go:embed prompts/classify.tmpl
var promptText []byte

// Prompt returns the parsed classify prompt.
func Prompt() *prompt.Template { return prompt.MustParse("classify", promptText) }

// Defaults for the LLM annotator.
const (
	DefaultRole     = "annotator"
	DefaultRetries  = 2
	DefaultMaxChars = 6000
)

// wire is the JSON the model writes inside its answer section.
type wire struct {
	Type       string   `json:"type" parse:"required,enum=new_ask|feedback|no_feedback"`
	Confidence *float64 `json:"confidence" parse:"required"`
	Reason     string   `json:"reason"`
	Refs       []string `json:"refs" parse:"required"`
}

type entry struct {
	Tag, Role string
	Turn      int
	Content   string
}

type promptData struct {
	Nonce    string
	Turn     int
	Messages []entry
}

// render builds the prompt for u_t of c: C_t as a tagged transcript. Each
// message is clipped to maxChars (head and tail kept) so one pasted log
// cannot blow the prompt up. It returns the messages and the tagger whose
// nonce the answer must carry.
func render(tmpl *prompt.Template, c *conv.Conversation, t, maxChars int) ([]conv.Message, parse.Tagger, error) {
	turns := c.Turns()
	if t < 1 || t > len(turns) {
		return nil, parse.Tagger{}, fmt.Errorf("rendering classify prompt: conversation %s has no turn %d", c.ID, t)
	}
	var es []entry
	if c.System != "" {
		es = append(es, entry{Tag: "system", Role: "system message", Content: clip(c.System, maxChars)})
	}
	for _, tr := range turns[:t] {
		d := t - tr.Index
		for i := tr.User; i < tr.End; i++ {
			m := c.Messages[i]
			e := entry{Role: string(m.Role), Turn: tr.Index, Content: clip(m.Content, maxChars)}
			switch {
			case i == tr.User && d == 0:
				e.Tag = "now"
			case i == tr.User:
				e.Tag = fmt.Sprintf("%du", d)
			case m.Role == conv.Assistant:
				e.Tag = fmt.Sprintf("%da", d)
			default:
				e.Tag = string(m.Role)
			}
			if tr.Index == t && i > tr.User {
				break // a_t and later are not part of C_t
			}
			es = append(es, e)
		}
	}
	parts := make([]string, 0, len(es))
	for _, e := range es {
		parts = append(parts, e.Content)
	}
	tg := parse.NewTagger(parts...)
	msgs, err := tmpl.Render(promptData{Nonce: tg.Nonce(), Turn: t, Messages: es})
	return msgs, tg, err
}

// clip keeps the head and the tail of s when it is longer than n bytes.
func clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	head, tail := n*2/3, n/3
	// Cut on rune boundaries.
	for head > 0 && !isRuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !isRuneStart(s[start]) {
		start++
	}
	return s[:head] + fmt.Sprintf("\n[… %d characters left out …]\n", start-head) + s[start:]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// parser reads the answer section tagged with tg's nonce and validates its
// JSON for turn t.
func parser(tg parse.Tagger, t int) func(llm.Response) (Label, error) {
	return func(r llm.Response) (Label, error) {
		sec, err := tg.Parse(r.Text, []string{"answer"})
		if err != nil {
			return Label{}, err
		}
		var w wire
		if err := parse.JSON(sec["answer"], &w); err != nil {
			return Label{}, err
		}
		if *w.Confidence < 0 || *w.Confidence > 1 {
			return Label{}, fmt.Errorf("confidence %v is outside 0..1", *w.Confidence)
		}
		refs, err := checkRefs(w.Refs, t)
		if err != nil {
			return Label{}, err
		}
		model := r.Model
		if model == "" {
			model = "unknown"
		}
		return Label{Type: w.Type, Confidence: *w.Confidence, Reason: oneLine(w.Reason), Refs: refs, Annotator: "llm:" + model}, nil
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// LLM is the model-backed annotator.
type LLM struct {
	Client   *llm.Client
	Role     string // default DefaultRole
	Retries  int    // fresh draws after a malformed answer; default DefaultRetries
	MaxChars int    // per-message clip; default DefaultMaxChars

	tmpl *prompt.Template
}

func (a *LLM) defaults() {
	if a.Role == "" {
		a.Role = DefaultRole
	}
	if a.Retries == 0 {
		a.Retries = DefaultRetries
	}
	if a.MaxChars == 0 {
		a.MaxChars = DefaultMaxChars
	}
	if a.tmpl == nil {
		a.tmpl = Prompt()
	}
}

// Version is the variant version: the prompt's version and every setting
// that changes answers.
func (a *LLM) Version() string {
	a.defaults()
	model := ""
	if a.Client != nil {
		if ep, err := a.Client.Endpoint(a.Role); err == nil {
			model = ep.Model
		}
	}
	return fmt.Sprintf("%s;role=%s;model=%s;retries=%d;clip=%d", a.tmpl.Version(), a.Role, model, a.Retries, a.MaxChars)
}

// Messages returns the rendered prompt for u_t of c (for tests, dry runs and
// inspection).
func (a *LLM) Messages(c *conv.Conversation, t int) ([]conv.Message, error) {
	a.defaults()
	msgs, _, err := render(a.tmpl, c, t, a.MaxChars)
	return msgs, err
}

// Unit labels u_t of c with the model. A malformed answer (after retries) or
// a rejected request becomes a failed unit holding the raw text; budget,
// fatal endpoint and context errors are returned.
func (a *LLM) Unit(ctx context.Context, c *conv.Conversation, t int) (pipeline.Unit, error) {
	a.defaults()
	msgs, tg, err := render(a.tmpl, c, t, a.MaxChars)
	if err != nil {
		return pipeline.Unit{}, err
	}
	req := llm.Request{Role: a.Role, Stage: StageName, Messages: msgs, CompletionEstimate: 160}
	lab, resp, err := llm.CallParsed(ctx, a.Client, req, a.Retries, parser(tg, t))
	if err != nil {
		if u, ok := FailedUnit(t, err); ok {
			return u, nil
		}
		return pipeline.Unit{}, fmt.Errorf("labelling turn %d: %w", t, err)
	}
	out, err := lab.Encode()
	if err != nil {
		return pipeline.Unit{}, err
	}
	return pipeline.Unit{Turn: t, Attempts: 1, Output: out, Tokens: int64(resp.Usage.Total())}, nil
}

// FailedUnit turns an error that concerns only this unit (a malformed answer
// after retries, a request the endpoint rejected) into a failed unit with
// the raw answer kept. It reports false for errors that must stop the run.
func FailedUnit(turn int, err error) (pipeline.Unit, bool) {
	var pe *llm.ParseError
	if errors.As(err, &pe) {
		return pipeline.Unit{Turn: turn, Failed: true, Attempts: pe.Attempts, Error: err.Error(), Raw: pe.Raw}, true
	}
	var ce *llm.CallError
	if errors.As(err, &ce) && !llm.IsFatal(err) {
		return pipeline.Unit{Turn: turn, Failed: true, Attempts: 1, Error: err.Error(), Raw: ce.Raw}, true
	}
	return pipeline.Unit{}, false
}
