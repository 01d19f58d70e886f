package curate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Compactors are context strategies that replace the history before u_t,
// H^t (every message before u_t, the system message aside), with a shorter
// stand-in C(H^t), as an agent harness does when its context fills up
// (Wang et al., "Lost in Compaction"). The context before turn t is the
// system message (kept by every strategy), C(H^t), then u_t. Each turn is
// compacted on its own, from the full history before it, so turns do not
// depend on each other.
//
// A compactor's LIST item may carry one argument after "=", the way the
// parameterised names are written everywhere a strategy is named:
//
//	recent-n=N         the last N messages of H^t (bare recent-n: the
//	                   configured N, 5 by default, the paper's Recent-5)
//	llm-compact        H^t summarized by a model with our prompt or
//	                   stages.curate.llm_compact.prompt_file
//	llm-compact=NAME   the same with the prompt named NAME under
//	                   stages.curate.llm_compact.prompts
//	extract-sc=C       C(H^t) ⊕ S^t: compactor C's output followed by the
//	                   session constraints recorded up to turn t (bare
//	                   extract-sc: C is llm-compact)
//	plugin=NAME        the compactor run by the user's command or HTTP
//	                   endpoint configured as NAME under
//	                   stages.curate.plugins
//
// ":" (judge pairs), "/" (judge contexts), "," and "+" (LIST syntax) never
// appear in a strategy name, so the argument follows "=".
const (
	CompactRecentN   = "recent-n"
	CompactLLM       = "llm-compact"
	CompactExtractSC = "extract-sc"
	CompactPlugin    = "plugin"
)

// DefaultRecentN is the N of a bare recent-n: the paper's Recent-5.
const DefaultRecentN = 5

// CompactorNames lists the compactors' base names, as LIST items are
// written (with their argument's form).
func CompactorNames() []string {
	return []string{CompactRecentN + "=N", CompactLLM + "[=PROMPT]", CompactExtractSC + "[=COMPACTOR]", CompactPlugin + "=NAME"}
}

// CompactOptions configures the compactors; the zero value gives recent-n
// with N = 5 and llm-compact with our prompt, and no plug-ins.
type CompactOptions struct {
	// RecentN is the N of a bare recent-n (DefaultRecentN when 0).
	RecentN int
	// Prompt is llm-compact's prompt (nil: ours, CompactPrompt); Prompts
	// are the prompts llm-compact=NAME uses, by NAME. Each is a template
	// checked with prompt.ParseFile against CompactPromptSpec, so its text
	// is in its version.
	Prompt  *prompt.Template
	Prompts map[string]*prompt.Template
	// History is how llm-compact shows H^t to the model when the prompt
	// does not place {{.Transcript}} itself: HistoryTranscript ("" too) or
	// HistoryMessages.
	History string
	// Role is the model role llm-compact calls ("" : the analyzer's).
	Role string
	// Plugins are the plug-in compactors, by the NAME of plugin=NAME.
	Plugins map[string]Plugin
	// Cache keeps plug-in answers across runs and strategies (the run's
	// answer cache, ledger.LLMCache); nil keeps them for one conversation
	// only.
	Cache llm.Cache
}

// isCompactor reports whether a LIST name (without overlays) is a
// compactor's, and splits it into base name and argument.
func isCompactor(name string) (base, arg string, ok bool) {
	base, arg, _ = strings.Cut(name, "=")
	switch base {
	case CompactRecentN, CompactLLM, CompactExtractSC, CompactPlugin:
		return base, arg, true
	}
	return "", "", false
}

// compactNeedsModel reports whether the compactor called name calls a model
// through the analyzer's client.
func compactNeedsModel(name string) bool {
	base, arg, ok := isCompactor(name)
	switch {
	case !ok:
		return false
	case base == CompactLLM:
		return true
	case base == CompactExtractSC:
		if arg == "" {
			return true
		}
		return compactNeedsModel(arg)
	}
	return false
}

// compactorByName builds the compactor a LIST name (without overlays)
// names; ok is false when name is no compactor's.
func compactorByName(name string, opts Options) (Strategy, bool, error) {
	base, arg, ok := isCompactor(name)
	if !ok {
		return nil, false, nil
	}
	fail := func(format string, args ...any) (Strategy, bool, error) {
		return nil, true, fmt.Errorf("building strategy %q: "+format, append([]any{name}, args...)...)
	}
	switch base {
	case CompactRecentN:
		n := opts.Compact.RecentN
		if n == 0 {
			n = DefaultRecentN
		}
		if arg != "" {
			v, err := strconv.Atoi(arg)
			if err != nil {
				return fail("N must be a whole number of messages, as in recent-n=5 (got %q)", arg)
			}
			n = v
		}
		if n < 1 {
			return fail("N must be at least 1 (got %d)", n)
		}
		return RecentN{name: name, n: n}, true, nil
	case CompactLLM:
		if opts.Analyzer == nil {
			return nil, true, nil // the caller says it needs a model
		}
		s, err := newLLMCompact(name, arg, opts)
		if err != nil {
			return fail("%v", err)
		}
		return s, true, nil
	case CompactExtractSC:
		inner := arg
		if inner == "" {
			inner = CompactLLM
		}
		if ib, _, ok := isCompactor(inner); !ok || ib == CompactExtractSC {
			return fail("the argument must name another compactor (recent-n=N, llm-compact[=PROMPT], plugin=NAME), got %q", inner)
		}
		c, _, err := compactorByName(inner, opts)
		if err != nil {
			return nil, true, err
		}
		if c == nil {
			return nil, true, nil
		}
		if opts.Units == nil {
			return fail("%w", ErrNeedsConstraints)
		}
		return &ExtractSC{name: name, inner: c.(compactor), units: opts.Units, up: opts.Constraints}, true, nil
	case CompactPlugin:
		p, ok := opts.Compact.Plugins[arg]
		if !ok {
			known := make([]string, 0, len(opts.Compact.Plugins))
			for k := range opts.Compact.Plugins {
				known = append(known, k)
			}
			return fail("no plug-in %q is configured under stages.curate.plugins (configured: %s)", arg, orNone(known))
		}
		s, err := newPluginCompactor(name, arg, p, opts.Compact.Cache)
		if err != nil {
			return fail("%v", err)
		}
		return s, true, nil
	}
	return nil, false, nil
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	slices.Sort(xs)
	return strings.Join(xs, ", ")
}

// compactor is what extract-sc wraps: a compactor's stand-in for H^t at
// each turn, as parts, with what making it cost.
type compactor interface {
	Strategy
	// compacted returns, for each turn of sel, the parts standing for the
	// history before it. At a failed turn it returns the turns before it
	// and a *TurnError.
	compacted(ctx context.Context, c *conv.Conversation, sel []conv.Turn, ws *Workspace) ([]compactedTurn, error)
}

// compactedTurn is C(H^t) for one turn.
type compactedTurn struct {
	turn  conv.Turn
	parts []curated.Part
	info  curated.Info
}

// compactContexts builds head + C(H^t) + u_t for every turn from `from`.
func compactContexts(ctx context.Context, s compactor, c *conv.Conversation, from int, ws *Workspace, tail func(compactedTurn) ([]curated.Part, curated.Info, error)) ([]curated.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, _ := selectTurns(c, from)
	if len(sel) == 0 {
		return nil, nil
	}
	cts, cerr := s.compacted(ctx, c, sel, ws)
	head, _ := systemHead(c, ws)
	out := make([]curated.Context, 0, len(cts))
	for _, ct := range cts {
		parts := make([]curated.Part, 0, len(head)+len(ct.parts)+2)
		parts = append(append(parts, head...), ct.parts...)
		info := ct.info
		if tail != nil {
			more, inf, err := tail(ct)
			if err != nil {
				return out, err
			}
			parts, info = append(parts, more...), inf
		}
		parts = append(parts, curated.MessagePart(ct.turn.User))
		out = append(out, curated.Context{Strategy: s.Name(), Turn: ct.turn.Index, Parts: parts, Tokens: ws.Total(parts), Messages: curated.MessageCount(parts), Info: info})
	}
	return out, cerr
}

// history returns H^t: the messages before u_t.
func history(c *conv.Conversation, t conv.Turn) []conv.Message { return c.Messages[:t.User] }

// RenderTranscript writes messages as the reference code's compactors read
// a history: one "[role]: content" line per message.
func RenderTranscript(msgs []conv.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%s]: %s", m.Role, m.Content)
	}
	return b.String()
}

// RecentN is recent-n=N: the last N messages of H^t (each message counts
// as one, whatever its role: the reference code's Recent-N keeps the last
// N messages, which the paper calls turns), then u_t. With fewer than N
// messages before u_t it is fc.
type RecentN struct {
	name string
	n    int
}

// Name returns the LIST item, e.g. "recent-n=5".
func (s RecentN) Name() string { return s.name }

// Version includes N.
func (s RecentN) Version() string { return "recent-n1;n=" + strconv.Itoa(s.n) }

// N returns how many messages of the history the strategy keeps.
func (s RecentN) N() int { return s.n }

// Contexts builds the recent-n context for each turn t >= from.
func (s RecentN) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	return compactContexts(ctx, s, c, from, ws, nil)
}

func (s RecentN) compacted(_ context.Context, _ *conv.Conversation, sel []conv.Turn, _ *Workspace) ([]compactedTurn, error) {
	out := make([]compactedTurn, 0, len(sel))
	for _, t := range sel {
		parts := make([]curated.Part, 0, min(s.n, t.User))
		for i := max(0, t.User-s.n); i < t.User; i++ {
			parts = append(parts, curated.MessagePart(i))
		}
		out = append(out, compactedTurn{turn: t, parts: parts})
	}
	return out, nil
}

// ReadsConstraints reports whether the LIST item reads the constraints
// stage's registry: the +constraints overlay, and extract-sc.
func (s Spec) ReadsConstraints() bool {
	base, _, _ := isCompactor(s.Name)
	return s.Constraints || base == CompactExtractSC
}
