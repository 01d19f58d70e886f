package curate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
)

// The curate stage with the online memory (package memory has the chain
// itself): the AC3 operators whose step 2 reads the cheatsheet the
// conversations before this one left, and the stage that brings the chain
// up to each conversation before curating it.

// onlineMemoKind names where OnlineStage leaves the conversation's memory in
// its Workspace for the online operators.
const onlineMemoKind = "online-memory"

// onlineOperator is an AC3 operator whose step 2 receives the online
// cheatsheet as it stood before the conversation.
type onlineOperator struct {
	op      string
	an      *analyze.Analyzer
	gate    Gate
	form    form
	version string
}

func (s *onlineOperator) Name() string { return s.op }

// Version is the operator's version with the chain's id in place of a
// cheatsheet hash: the cheatsheet differs per conversation, the rule that
// builds it does not.
func (s *onlineOperator) Version() string { return s.version }

func (s *onlineOperator) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	v, ok := ws.recall(memoKey{kind: onlineMemoKind})
	if !ok {
		return nil, fmt.Errorf("curating %s with %s: the online memory was not prepared for this conversation (online operators run in an OnlineStage)", c.ID, s.op)
	}
	return newOperator(s.op, s.an, s.gate, s.form, v.(memory.Memory)).Contexts(ctx, c, from, ws)
}

// OnlineByName is ByName for a run with the online memory m: the AC3
// operators (augment, reset, gated-reset, rewrite, with or without
// +constraints) give step 2 the cheatsheet m built from the conversations
// before the one curated; every other strategy is ByName's. A nil m is
// ByName.
func OnlineByName(name string, opts Options, m *memory.Online) (Strategy, error) {
	spec, err := parseSpec(name)
	if err != nil {
		return nil, err
	}
	switch spec.Name {
	case curated.OpAugment, curated.OpReset, curated.OpGatedReset, curated.OpRewrite:
	default:
		return ByName(name, opts)
	}
	if m == nil || opts.Analyzer == nil {
		return ByName(name, opts)
	}
	g, ok := opts.Gates[spec.Name]
	if !ok {
		g = DefaultGate(spec.Name)
	}
	if g.Floor < 0 || g.Cap < 0 {
		return nil, fmt.Errorf("building strategy %q: floor and cap must be >= 0 (got %d, %d)", spec.Name, g.Floor, g.Cap)
	}
	f, err := formOf(opts)
	if err != nil {
		return nil, fmt.Errorf("building strategy %q: %w", spec.Name, err)
	}
	var base Strategy = &onlineOperator{op: spec.Name, an: opts.Analyzer, gate: g, form: f,
		version: newOperator(spec.Name, opts.Analyzer, g, f, memory.Memory{}).Version() + ";memory=online:" + m.Chain().ID}
	if spec.Constraints {
		if opts.Units == nil {
			return nil, fmt.Errorf("building strategy %q: %w", spec, ErrNeedsConstraints)
		}
		return WithConstraints(base, opts.Units, opts.Constraints), nil
	}
	return base, nil
}

// UsesOnlineMemory reports whether st (possibly under an overlay) is an
// online operator.
func UsesOnlineMemory(st Strategy) bool {
	if o, ok := st.(*constraintsOverlay); ok {
		st = o.inner
	}
	_, ok := st.(*onlineOperator)
	return ok
}

// OnlineStage is the curate stage of a run with the online memory. A task
// with an online operator among its pending variants first brings the
// memory up to its conversation (memory.Online.Before), then curates as
// Stage does. It is a pipeline.ChainStage: the engine brings the memory up
// to one conversation at a time, in ingest order, and curates conversations
// whose memory is ready concurrently with the chain moving on.
type OnlineStage struct {
	*Stage
	mem *memory.Online

	// In batch mode the chain stops for the pass at the first conversation
	// whose learning waits for a batch (held, at heldAt): the conversations
	// after it cannot know their cheatsheet yet. See Chain.
	mu     sync.Mutex
	held   bool
	heldAt int64
}

// NewOnlineStage returns the stage for strategies (built with OnlineByName
// and m), curating turns from m's `from` on.
func NewOnlineStage(strategies []Strategy, counter *tokens.Counter, m *memory.Online) *OnlineStage {
	return &OnlineStage{Stage: NewStage(strategies, counter, m.From()), mem: m}
}

// Memory returns the stage's online memory.
func (s *OnlineStage) Memory() *memory.Online { return s.mem }

// Process implements pipeline.Stage.
func (s *OnlineStage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	rest, err := s.Chain(ctx, t)
	if err != nil {
		return nil, err
	}
	return rest(ctx)
}

// Chain implements pipeline.ChainStage. It learns from t's conversation
// when the memory has not passed it yet (the step is stored before Chain
// returns) and returns the curation of t with the memory as it stood before
// the conversation. The returned function owns t's workspace; it may run
// while Chain moves on to later conversations.
func (s *OnlineStage) Chain(ctx context.Context, t pipeline.Task) (func(context.Context) ([]pipeline.Result, error), error) {
	uses := slices.ContainsFunc(t.Variants, func(v pipeline.Variant) bool {
		st, ok := s.byName[v.Name]
		return ok && UsesOnlineMemory(st)
	})
	if !uses {
		return func(ctx context.Context) ([]pipeline.Result, error) { return s.Stage.Process(ctx, t) }, nil
	}
	ws := s.workspace(t)
	if s.heldBefore(t.Seq) {
		// An earlier conversation's learning waits for a batch, so this
		// one's cheatsheet is not known: only what reads none is asked.
		wait := fmt.Errorf("curating %s: the online memory waits for an earlier conversation's batch answers: %w", t.Conv.ID, llm.ErrDeferred)
		return func(ctx context.Context) ([]pipeline.Result, error) { return nil, s.askAhead(ctx, t, ws, true, wait) }, nil
	}
	m, err := s.mem.Before(ctx, t.Seq, t.Conv, s.keep(ctx, ws))
	if errors.Is(err, llm.ErrDeferred) {
		s.hold(t.Seq)
		wait := fmt.Errorf("curating %s: %w", t.Conv.ID, err)
		return func(ctx context.Context) ([]pipeline.Result, error) { return nil, s.askAhead(ctx, t, ws, false, wait) }, nil
	}
	if err != nil {
		return nil, fmt.Errorf("curating %s: %w", t.Conv.ID, err)
	}
	ws.remember(memoKey{kind: onlineMemoKind}, m)
	return func(ctx context.Context) ([]pipeline.Result, error) { return s.processWith(ctx, t, ws) }, nil
}

// keep leaves the analyses the chain makes of ws's conversation in ws,
// where the operators find them, unless ws's task is a retry: the chain
// always asks with re-ask counter 0, and a retry asks afresh.
func (s *OnlineStage) keep(ctx context.Context, ws *Workspace) memory.Keep {
	return func(given memory.Memory, turn int, a analyze.Analysis, use analyze.Usage, err error) error {
		if ws.Retry() != 0 {
			return err
		}
		return rememberAnalysis(ctx, s.mem.Analyzer(), given, turn, ws, a, use, err)
	}
}

// hold stops the chain for this pass at the conversation at seq, whose
// learning waits for a batch.
func (s *OnlineStage) hold(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held, s.heldAt = true, seq
}

// heldBefore reports whether the chain waits at a conversation before seq.
// Chain is called in ingest order within a pass, so a seq at or before the
// held one starts a new pass (the batch's answers are in): the hold ends.
func (s *OnlineStage) heldBefore(seq int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held && seq <= s.heldAt {
		s.held = false
	}
	return s.held
}

// askAhead queues what t's conversation can ask while the online chain
// waits (the cheatsheet is the one input not known yet): the calls of its
// strategies that do not use the memory and, with firstSteps, the part of
// each analysis of the chain's trajectory that reads no cheatsheet (step
// 1). Their answers are the ones the pass that reaches the conversation
// asks for, so the chain's wait costs each conversation the rounds of its
// later steps only. It returns wait, the task's deferral, unless an error
// must stop the run.
func (s *OnlineStage) askAhead(ctx context.Context, t pipeline.Task, ws *Workspace, firstSteps bool, wait error) error {
	if firstSteps {
		var d deferrals
		sel, _ := selectTurns(t.Conv, s.mem.From())
		for _, tr := range sel {
			// The chain asks with re-ask counter 0 (see memory.Online).
			_, err := s.mem.Analyzer().FirstStep(ctx, t.Conv, tr.Index, 0)
			if err := d.note(err); err != nil {
				return err
			}
		}
	}
	rest := t
	rest.Variants = slices.DeleteFunc(slices.Clone(t.Variants), func(v pipeline.Variant) bool {
		st, ok := s.byName[v.Name]
		return ok && UsesOnlineMemory(st)
	})
	if len(rest.Variants) > 0 {
		if _, err := s.processWith(ctx, rest, ws); err != nil && !errors.Is(err, llm.ErrDeferred) {
			return err
		}
	}
	return wait
}
