package curate

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
)

//go:embed prompts/compact.tmpl
var compactPromptFile embed.FS

// How llm-compact shows the history to the model when its prompt does not
// place {{.Transcript}} itself.
const (
	// HistoryTranscript sends H^t as one user message of "[role]: content"
	// lines, then the prompt's user message: the form in which the
	// reference code sent the Anthropic compaction prompt.
	HistoryTranscript = "transcript"
	// HistoryMessages sends H^t as the chat messages it is made of, between
	// the prompt's system message and its user message: the form in which
	// the reference code sent the pi-mono prompt.
	HistoryMessages = "messages"
)

// ActionCompact is llm-compact's Info.Action on a turn it compacted.
const ActionCompact = "compact"

// CompactData is what a compaction prompt is rendered with.
type CompactData struct {
	// Transcript is H^t as "[role]: content" lines. A prompt that uses it
	// places the history itself, and the history is sent nowhere else.
	Transcript string
}

// CompactPromptSpec declares llm-compact's prompt for users' files
// (prompt_file, prompts): plain text is its user message, and a
// {{define "system"}} section its system message. Nothing is required: a
// production compaction prompt copied as it is works, with the history
// sent as History says.
var CompactPromptSpec = prompt.Spec{Name: "compact", Data: reflect.TypeFor[CompactData]()}

// CompactPrompt returns llm-compact's shipped prompt.
func CompactPrompt() *prompt.Template {
	b, err := compactPromptFile.ReadFile("prompts/compact.tmpl")
	if err != nil {
		panic(err) // embedded at build time
	}
	return prompt.MustParse("compact", b)
}

// transcriptMarker detects whether a prompt places the transcript itself.
const transcriptMarker = "\x00ac3-transcript\x00"

// LLMCompact is llm-compact: C(H^t) is a model's summary of H^t, written
// under a compaction prompt, as one assistant message (as the reference
// code puts it), then u_t. Each turn's history is compacted by its own
// call, from the full history, so turns do not depend on each other; the
// run's answer cache answers a repeated request.
type LLMCompact struct {
	name    string
	an      *analyze.Analyzer
	tmpl    *prompt.Template
	history string // HistoryTranscript, HistoryMessages or "inline"
	role    string
	version string
}

func newLLMCompact(name, arg string, opts Options) (*LLMCompact, error) {
	co := opts.Compact
	tmpl := co.Prompt
	if arg != "" {
		t, ok := co.Prompts[arg]
		if !ok {
			known := make([]string, 0, len(co.Prompts))
			for k := range co.Prompts {
				known = append(known, k)
			}
			return nil, fmt.Errorf("no compaction prompt %q under stages.curate.llm_compact.prompts (configured: %s)", arg, orNone(known))
		}
		tmpl = t
	}
	if tmpl == nil {
		tmpl = CompactPrompt()
	}
	history, err := ParseHistory(co.History)
	if err != nil {
		return nil, err
	}
	msgs, err := tmpl.Render(CompactData{Transcript: transcriptMarker})
	if err != nil {
		return nil, fmt.Errorf("rendering compaction prompt %s: %w", tmpl.Version(), err)
	}
	for _, m := range msgs {
		if strings.Contains(m.Content, transcriptMarker) {
			history = "inline"
		}
	}
	role := co.Role
	if role == "" {
		role = opts.Analyzer.Role()
	}
	if cl := opts.Analyzer.Client(); cl != nil {
		if _, err := cl.Endpoint(role); err != nil {
			return nil, fmt.Errorf("the compaction role: %w (bind it under roles, or leave stages.curate.llm_compact.role out to use the analyzer's)", err)
		}
	}
	s := &LLMCompact{name: name, an: opts.Analyzer, tmpl: tmpl, history: history, role: role}
	s.version = "llmc1;" + tmpl.Version() + ";history=" + history + ";role=" + role
	return s, nil
}

// ParseHistory checks a history layout ("" is HistoryTranscript).
func ParseHistory(s string) (string, error) {
	switch s {
	case "", HistoryTranscript:
		return HistoryTranscript, nil
	case HistoryMessages:
		return s, nil
	}
	return "", fmt.Errorf("history %q: valid: %s, %s", s, HistoryTranscript, HistoryMessages)
}

// Name returns the LIST item, e.g. "llm-compact" or "llm-compact=pi-mono".
func (s *LLMCompact) Name() string { return s.name }

// Version includes the prompt's version (its text's hash for a user's
// file), the history layout and the role.
func (s *LLMCompact) Version() string { return s.version }

// Prompt returns the compaction prompt in use.
func (s *LLMCompact) Prompt() *prompt.Template { return s.tmpl }

// Contexts builds the llm-compact context for each turn t >= from.
func (s *LLMCompact) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	return compactContexts(ctx, s, c, from, ws, nil)
}

// Request is the compaction request for history h.
func (s *LLMCompact) Request(h []conv.Message) ([]conv.Message, error) {
	tr := ""
	if s.history == "inline" {
		tr = RenderTranscript(h)
	}
	msgs, err := s.tmpl.Render(CompactData{Transcript: tr})
	if err != nil {
		return nil, fmt.Errorf("rendering compaction prompt %s: %w", s.tmpl.Version(), err)
	}
	if s.history == "inline" {
		return msgs, nil
	}
	sys, user := msgs[:len(msgs)-1], msgs[len(msgs)-1]
	out := append([]conv.Message(nil), sys...)
	if s.history == HistoryMessages {
		out = append(out, h...)
	} else {
		out = append(out, conv.Message{Role: conv.User, Content: RenderTranscript(h)})
	}
	return append(out, user), nil
}

// compactResult is one turn's compaction; counted is set once a context
// has recorded its usage (the first to need it, as for sum's summaries).
type compactResult struct {
	text    string
	use     analyze.Usage
	counted bool
}

func (s *LLMCompact) key(t conv.Turn) memoKey {
	return memoKey{kind: "llm-compact", version: s.version, n: t.User}
}

// call compacts the history before t (memoized per conversation).
func (s *LLMCompact) call(ctx context.Context, c *conv.Conversation, t conv.Turn, ws *Workspace) (*compactResult, error) {
	if v, ok := ws.recall(s.key(t)); ok {
		return v.(*compactResult), nil
	}
	msgs, err := s.Request(history(c, t))
	if err != nil {
		return &compactResult{}, err
	}
	cl := s.an.Client()
	if cl == nil {
		return &compactResult{}, errors.New("compacting the history: no model client")
	}
	var price *llm.Price
	if ep, err := cl.Endpoint(s.role); err == nil {
		price = &ep.Price
	}
	var use analyze.Usage
	req := llm.Request{Role: s.role, Stage: StageName, Messages: msgs, Reroll: ws.Retry()}
	text, _, err := llm.CallParsed(ctx, cl, req, analyze.DefaultRetries, func(r llm.Response) (string, error) {
		use.Add(responseUsage(r, price))
		t := strings.TrimSpace(r.Text)
		if t == "" {
			return "", errors.New("the compaction answer is empty")
		}
		return t, nil
	})
	if err != nil {
		return &compactResult{use: use}, fmt.Errorf("compacting the history before turn %d with %s: %w", t.Index, s.tmpl.Version(), err)
	}
	r := &compactResult{text: text, use: use}
	ws.remember(s.key(t), r)
	return r, nil
}

func responseUsage(r llm.Response, price *llm.Price) analyze.Usage {
	u := analyze.Usage{Calls: 1, PromptTokens: r.Usage.Prompt, CompletionTokens: r.Usage.Completion, CostUSD: r.CostUSD}
	if r.FromCache {
		u.Cached = 1
	}
	if price != nil {
		u.ListUSD, u.Listed = price.Cost(llm.Usage{Prompt: r.Usage.Prompt, Completion: r.Usage.Completion}), 1
	}
	return u
}

func (s *LLMCompact) compacted(ctx context.Context, c *conv.Conversation, sel []conv.Turn, ws *Workspace) ([]compactedTurn, error) {
	if cl := s.an.Client(); cl != nil && cl.BatchMode(s.role) {
		// Every turn's call is independent: ask them all, so one batch
		// round serves the conversation.
		var d deferrals
		for _, t := range sel {
			if t.User == 0 {
				continue
			}
			_, err := s.call(ctx, c, t, ws)
			if err := d.note(err); err != nil {
				return nil, err
			}
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	out := make([]compactedTurn, 0, len(sel))
	for _, t := range sel {
		ct := compactedTurn{turn: t, info: curated.Info{Operator: CompactLLM, Action: ActionCompact}}
		if t.User == 0 {
			out = append(out, ct)
			continue
		}
		r, err := s.call(ctx, c, t, ws)
		if !r.counted {
			ct.info.OperatorUsage, r.counted = r.use, true
		}
		if err != nil {
			if raw, ok := analyze.Failure(err); ok {
				return out, &TurnError{Turn: t.Index, Raw: raw, Err: err}
			}
			return out, err
		}
		ct.parts = []curated.Part{curated.TextPart(conv.Assistant, r.text)}
		out = append(out, ct)
	}
	return out, nil
}
