package constraints

import (
	"context"
	_ "embed"
	"fmt"
	"reflect"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/annotator"
)

// The forms of the llm variant's registry (Options.Registry).
const (
	// RegistrySequential is the paper's form: the request for turn t
	// carries the registry the answers for turns < t built, so a
	// conversation's turns are asked one after another (one batch round
	// per user turn in batch mode).
	RegistrySequential = "sequential"
	// RegistryParallel asks every turn at once: each request carries only
	// what no other answer decides (u_t, a_{t-1}, the earlier user turns),
	// and the registry is assembled from the answers without a model
	// (Consolidate). One batch round per conversation.
	RegistryParallel = "parallel"
)

// Registries lists the forms.
func Registries() []string { return []string{RegistrySequential, RegistryParallel} }

// ParallelPromptName is the name of the parallel form's prompt, and the key
// of a user's template for it under stages.constraints.prompts.
const ParallelPromptName = "constraints_parallel"

// The earlier user turns a parallel request shows: the most recent
// earlierShown, each clipped to earlierClip bytes. They are there to spot
// repeats and changes, which name an earlier instruction in a sentence or
// two; showing every turn whole would make a conversation's prompts grow
// with the square of its length.
const (
	earlierShown = 20
	earlierClip  = 400
)

//go:embed prompts/constraints_parallel.tmpl
var parallelPromptText []byte

// ParallelPrompt returns the parsed prompt of the parallel form.
func ParallelPrompt() *prompt.Template {
	return prompt.MustParse(ParallelPromptName, parallelPromptText)
}

// ParallelPromptSpec declares the parallel form's prompt for a user's
// template that replaces it: it is rendered with the turn's user message
// (.User, which it must show), the assistant message before it
// (.PrevAssistant), the earlier user turns (.Earlier, each with .Turn and
// .Text; .LeftOut is the last turn left out before them, 0 when none),
// .Turn and .Nonce. There is no registry: no answer of another turn may
// reach the prompt. The answer's form is ac3's.
func ParallelPromptSpec() prompt.Spec {
	return prompt.Spec{
		Name: ParallelPromptName, Data: reflect.TypeFor[parallelData](), Needs: []string{"User"}, Contract: []string{"Answer", "JSON"},
		Withheld: map[string]string{"Registry": "the parallel form asks every turn at once, so no request can hold what other turns' answers found; use .Earlier"},
	}
}

// EarlierTurn is one earlier user turn shown to the parallel form.
type EarlierTurn struct {
	Turn int
	Text string
}

type parallelData struct {
	Nonce         string
	Turn          int
	User          string
	PrevAssistant string
	Earlier       []EarlierTurn
	LeftOut       int    // turns 1 … LeftOut are not shown
	Answer        string // the answer's form, laid out for the output
	JSON          bool   // json_schema output
}

// wireProposal is one constraint of the parallel form's answer. Repeats and
// Revises are optional (absent or null is 0), so an answer in the
// sequential form's shape is a valid one with neither.
type wireProposal struct {
	Text     string `json:"text" parse:"required"`
	Evidence string `json:"evidence" parse:"required"`
	Type     string `json:"type" parse:"required,enum=action|information|process|preference|output"`
	Repeats  int    `json:"repeats" hint:"0"`
	Revises  int    `json:"revises" hint:"0"`
}

// parallelWire is the parallel form's JSON answer; its struct tags are the
// one declaration of its fields.
type parallelWire struct {
	Constraints []wireProposal `json:"constraints" parse:"required"`
}

// Proposal is a constraint the parallel form found at one user turn, with
// how it relates to the earlier turns, which Consolidate uses to fold the
// proposals into the registry without a model.
type Proposal struct {
	Constraint
	// Repeats is the earlier user turn whose constraint this one only
	// states again (0: none).
	Repeats int
	// Revises is the earlier user turn whose constraint this one changes
	// and replaces (0: none).
	Revises int
}

// renderParallel builds the parallel prompt from in alone, leaving out its
// registry, so the prompt cannot hold another turn's answer.
func renderParallel(a *annotator.LLM, in Input) ([]conv.Message, parse.Tagger, error) {
	d := parallelData{Turn: in.turn}
	d.User, d.PrevAssistant = in.shown(a)
	first := max(0, len(in.earlier)-earlierShown)
	d.LeftOut = first
	parts := []string{d.User, d.PrevAssistant}
	for i := first; i < len(in.earlier); i++ {
		// One line per turn keeps the turn numbers easy to read back.
		text := annotator.OneLine(annotator.Clip(in.earlier[i], earlierClip))
		d.Earlier = append(d.Earlier, EarlierTurn{Turn: i + 1, Text: text})
		parts = append(parts, text)
	}
	return annotator.Render[parallelWire](a, StageName, parts, func(nonce, answer string, json bool) any {
		d.Nonce, d.Answer, d.JSON = nonce, answer, json
		return d
	})
}

// checkParallel validates the parallel form's answer for turn t as check
// does the sequential one's. A repeats or revises that names no earlier
// turn (0, negative, t or later) is read as 0: the constraint is then
// simply new, which is what the sequential form would record.
func checkParallel(user string, t int) func(parallelWire) ([]Proposal, error) {
	return func(w parallelWire) ([]Proposal, error) {
		cs := make([]wireConstraint, len(w.Constraints))
		for i, p := range w.Constraints {
			cs[i] = wireConstraint{Text: p.Text, Evidence: p.Evidence, Type: p.Type}
		}
		found, err := check(user)(wire{Constraints: cs})
		if err != nil {
			return nil, err
		}
		out := make([]Proposal, len(found))
		for i, c := range found {
			c.Turn = t
			out[i] = Proposal{Constraint: c, Repeats: earlierTurn(w.Constraints[i].Repeats, t), Revises: earlierTurn(w.Constraints[i].Revises, t)}
		}
		return out, nil
	}
}

func earlierTurn(k, t int) int {
	if k < 1 || k >= t {
		return 0
	}
	return k
}

// Consolidate folds the proposals of user turn t into reg, the registry as
// of turn t-1, and returns the constraints added at t and the registry as of
// t. It calls no model, and it is how the parallel form resolves what the
// sequential form asks the model (by showing it the registry). In order, for
// each proposal p:
//
//  1. p.Revises = k: one constraint set at turn k leaves the registry: the
//     one of p's type, else any, and among those the one sharing most words
//     with p (the first on a tie). Nothing leaves when turn k has none left.
//  2. p.Repeats = k (and no Revises): p is dropped when the registry still
//     holds a constraint set at turn k; otherwise (turn k's answer failed,
//     missed it, or a later turn revised it away) p is recorded at t.
//  3. p is dropped when the registry already holds its text (Duplicate, the
//     check the sequential form's merge makes too); otherwise it is added
//     with turn t.
//
// reg is not modified.
func Consolidate(reg []Constraint, props []Proposal, t int) (added, out []Constraint) {
	out = append([]Constraint(nil), reg...)
	added = []Constraint{}
	for _, p := range props {
		c := p.Constraint
		c.Turn = t
		switch {
		case p.Revises > 0:
			if i := revised(out, c, p.Revises); i >= 0 {
				out = append(out[:i:i], out[i+1:]...)
			}
		case p.Repeats > 0 && setAt(out, p.Repeats):
			continue
		}
		added, out = addNew(added, out, c)
	}
	return added, out
}

// revised is the index in reg of the constraint set at turn k that c
// replaces, or -1.
func revised(reg []Constraint, c Constraint, k int) int {
	best, bestType, bestShare := -1, false, -1.0
	for i, r := range reg {
		if r.Turn != k {
			continue
		}
		same, share := r.Type == c.Type, overlap(r.Text, c.Text)
		if best < 0 || (same && !bestType) || (same == bestType && share > bestShare) {
			best, bestType, bestShare = i, same, share
		}
	}
	return best
}

func setAt(reg []Constraint, k int) bool {
	for _, r := range reg {
		if r.Turn == k {
			return true
		}
	}
	return false
}

// overlap is the share of distinct words two sentences have in common
// (Jaccard), as Duplicate measures it.
func overlap(a, b string) float64 { return jaccard(words(a), words(b)) }

// parallelAsk is the parallel form's call: the earlier user turns in the
// prompt instead of the registry, proposals in the answer.
var parallelAsk = annotator.Ask[Input, parallelWire, []Proposal]{
	Stage:  StageName,
	Doing:  "reading turn",
	Tokens: answerTokens,
	Render: renderParallel,
	Check:  func(in Input) func(parallelWire) ([]Proposal, error) { return checkParallel(in.user, in.turn) },
}

// Proposer is the model-backed extractor of the parallel form. It has the
// settings of LLM (Client, Role, Retries, MaxChars, Output, Template: a
// user's template for the constraints_parallel prompt) and renders
// ParallelPrompt. Each turn's call depends on no other answer, so all of a
// conversation's turns are asked at once; the registry comes from
// Consolidate.
type Proposer annotator.LLM

// core returns p's settings with defaults filled and the prompt loaded.
func (p *Proposer) core() *annotator.LLM {
	return (*annotator.LLM)(p).Prepare(ParallelPrompt)
}

// Version is the variant version: the prompt's version (whose name sets it
// apart from the sequential form's), every setting that changes answers, and
// how much of the earlier turns a prompt shows.
func (p *Proposer) Version() string { return parallelVersion(p.core()) }

func parallelVersion(a *annotator.LLM) string {
	return fmt.Sprintf("%s;earlier=%dx%d", a.Version(), earlierShown, earlierClip)
}

// Messages returns the rendered prompt for in; in's registry is not used.
func (p *Proposer) Messages(in Input) ([]conv.Message, error) {
	return parallelAsk.Messages(p.core(), in)
}

// Propose asks the model for the constraints turn in.Turn() states. It
// returns the unit, whose Output is not set yet (the registry needs the
// other turns: see Consolidate), the proposals and the annotator name. A
// malformed answer after retries or a rejected request gives a failed unit;
// budget, fatal endpoint, deferral and context errors are returned.
func (p *Proposer) Propose(ctx context.Context, in Input) (pipeline.Unit, []Proposal, string, error) {
	return propose(ctx, p.core(), in, 0)
}

// propose is Propose with a prepared a, for work `ac3 retry` re-queued
// retry times.
func propose(ctx context.Context, a *annotator.LLM, in Input, retry int) (pipeline.Unit, []Proposal, string, error) {
	var (
		props []Proposal
		name  string
	)
	u, err := parallelAsk.Unit(ctx, a, in, in.turn, retry, func(found []Proposal, n string) ([]byte, error) {
		props, name = found, n
		return nil, nil
	})
	if err != nil {
		return pipeline.Unit{}, nil, "", err
	}
	return u, props, name, nil
}
