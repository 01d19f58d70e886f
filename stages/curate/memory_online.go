package curate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
)

// The online regime of the AC3 memory.
//
// The cheatsheet grows as the run proceeds. Conversations are taken in
// ingest (seq) order; for each one, every user turn t >= from is analyzed
// with the cheatsheet as it stood before the conversation (the analyses the
// operators then reuse), the analyzer reflects on that trajectory and
// merges the takeaways into the cheatsheet (analyze.Analyzer.Absorb), and
// the result is what step 2 of the next conversation receives. So the
// curated contexts of conversation k depend on conversations before k only,
// and a conversation the analyzer could not read (a malformed answer after
// its retries) leaves the cheatsheet as it was.
//
// Every step is stored in the run's settings (MetaStore), keyed by the chain
// and the seq of the conversation that produced it, before the
// conversation's units are returned to the engine, so it is durable by the
// time they are committed. A resumed run starts from the chain's head (the
// last conversation learned from, which is never older than the last
// committed one) and reuses the stored step of any conversation it meets
// again (an interrupted batch, `ac3 retry`, an operator added later), so it
// gives the same cheatsheets, and the run's answer cache means no call is
// paid twice. The trajectory is every turn from `from` on, whatever the
// operators' gates, so every operator of the run shares one chain.
//
// The chain is a function of the analyzer's version, the memory prompts and
// `from`; its id is in the unit keys of every online operator
// ("memory=online:<chain>"), and each curated context records the hash of
// the cheatsheet it was given ("online:<hash>", "online:none" before the
// first update).

// MetaStore keeps a run's settings by key. *ledger.Ledger satisfies it.
type MetaStore interface {
	Meta(ctx context.Context, key string) (string, bool, error)
	SetMeta(ctx context.Context, key, value string) error
}

// MetaOnlineChains is the settings key listing the run's online chains
// (JSON []OnlineChain); each chain's own keys start with
// MetaOnlineChains + "/" + its id + "/".
const MetaOnlineChains = "ac3.memory.online"

// onlineVersion versions the chain's layout and update rule (trajectory =
// every turn from `from`, failures leave the cheatsheet unchanged); bump it
// when either changes.
const onlineVersion = "online1"

// OnlineChain describes one online memory chain of a run.
type OnlineChain struct {
	ID       string `json:"id"`
	Analyzer string `json:"analyzer"`
	Memory   string `json:"memory"`
	From     int    `json:"from"`
}

// OnlineStep is the stored record of one conversation's update.
type OnlineStep struct {
	Seq  int64  `json:"seq"`
	Conv string `json:"conv"`
	// Prev is the seq of the step whose cheatsheet this conversation was
	// given (0: none, the first conversation).
	Prev int64 `json:"prev"`
	// Before and After are the hashes (analyze.MemoryHash, "" for empty) of
	// the cheatsheet before and after learning from this conversation.
	Before string `json:"before"`
	After  string `json:"after"`
	// Turns is how many turns were analyzed; Takeaways what the reflection
	// wrote; Skipped why the conversation taught nothing ("" when it did).
	Turns     int           `json:"turns"`
	Takeaways string        `json:"takeaways,omitempty"`
	Skipped   string        `json:"skipped,omitempty"`
	Usage     analyze.Usage `json:"usage"`
	Words     int           `json:"words"`
}

// onlineHead is where the chain stands: the last step and its cheatsheet.
type onlineHead struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
	text string
}

// OnlineMemory is one chain of the online regime; see the comment above.
// Its conversations must be taken one at a time in ingest order (the engine
// calls OnlineStage.Chain that way); it refuses overlapping or out-of-order
// updates rather than make a result that depends on timing.
type OnlineMemory struct {
	an    *analyze.Analyzer
	store MetaStore
	from  int
	chain OnlineChain

	mu     sync.Mutex
	loaded bool
	head   onlineHead
}

// NewOnlineMemory returns the chain for analyzer an learning from turns
// >= from (DefaultFrom when 0), stored in store. store may be nil for a
// memory that only reports its version (dry runs).
func NewOnlineMemory(an *analyze.Analyzer, store MetaStore, from int) *OnlineMemory {
	if from <= 0 {
		from = DefaultFrom
	}
	ch := OnlineChain{Analyzer: an.Version(), Memory: an.MemoryVersion(), From: from}
	h := sha256.New()
	for _, s := range []string{onlineVersion, ch.Analyzer, ch.Memory, fmt.Sprint(ch.From), fmt.Sprint(analyze.MaxCheatsheetWords)} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	ch.ID = hex.EncodeToString(h.Sum(nil)[:6])
	return &OnlineMemory{an: an, store: store, from: from, chain: ch}
}

// Chain describes the chain; its ID is in the online operators' versions.
func (m *OnlineMemory) Chain() OnlineChain { return m.chain }

func chainKey(chain, rest string) string { return MetaOnlineChains + "/" + chain + "/" + rest }

func stepKey(chain string, seq int64) string { return chainKey(chain, fmt.Sprintf("step/%020d", seq)) }

// OnlineChains lists the online chains a run has used.
func OnlineChains(ctx context.Context, store MetaStore) ([]OnlineChain, error) {
	raw, ok, err := store.Meta(ctx, MetaOnlineChains)
	if err != nil || !ok {
		return nil, err
	}
	var out []OnlineChain
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("reading the online memory chains: %w", err)
	}
	return out, nil
}

// OnlineHead returns the last step of chain: the seq of the conversation
// it learned from and the hash of the cheatsheet after it; ok is false for
// a chain that never stepped.
func OnlineHead(ctx context.Context, store MetaStore, chain string) (seq int64, hash string, ok bool, err error) {
	raw, ok, err := store.Meta(ctx, chainKey(chain, "head"))
	if err != nil || !ok {
		return 0, "", false, err
	}
	var h onlineHead
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return 0, "", false, fmt.Errorf("reading the head of online memory %s: %w", chain, err)
	}
	return h.Seq, h.Hash, true, nil
}

// OnlineStepAt returns the step chain took at conversation seq.
func OnlineStepAt(ctx context.Context, store MetaStore, chain string, seq int64) (OnlineStep, bool, error) {
	raw, ok, err := store.Meta(ctx, stepKey(chain, seq))
	if err != nil || !ok {
		return OnlineStep{}, false, err
	}
	var st OnlineStep
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return OnlineStep{}, false, fmt.Errorf("reading online memory %s at seq %d: %w", chain, seq, err)
	}
	return st, true, nil
}

// OnlineCheatsheet returns the cheatsheet with the given hash ("" is the
// empty one). Cheatsheets are stored once per distinct text, so a
// conversation that teaches nothing costs a step record only.
func OnlineCheatsheet(ctx context.Context, store MetaStore, chain, hash string) (string, error) {
	if hash == "" {
		return "", nil
	}
	text, ok, err := store.Meta(ctx, chainKey(chain, "sheet/"+hash))
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("reading online memory %s: cheatsheet %s is missing", chain, hash)
	}
	return text, nil
}

// given is the Memory an operator receives: the text and a hash that says
// it is online (and "none" before the first update).
func given(text string) Memory {
	h := analyze.MemoryHash(text)
	if h == "" {
		h = "none"
	}
	return Memory{Cheatsheet: text, Hash: "online:" + h}
}

// load reads the chain's head once, and lists the chain in the run.
func (m *OnlineMemory) load(ctx context.Context) error {
	if m.loaded {
		return nil
	}
	if m.store == nil {
		return errors.New("online memory: no run to store the cheatsheet in")
	}
	chains, err := OnlineChains(ctx, m.store)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(chains, func(c OnlineChain) bool { return c.ID == m.chain.ID }) {
		b, err := json.Marshal(append(chains, m.chain))
		if err != nil {
			return err
		}
		if err := m.store.SetMeta(ctx, MetaOnlineChains, string(b)); err != nil {
			return err
		}
	}
	seq, hash, ok, err := OnlineHead(ctx, m.store, m.chain.ID)
	if err != nil {
		return err
	}
	if ok {
		text, err := OnlineCheatsheet(ctx, m.store, m.chain.ID, hash)
		if err != nil {
			return err
		}
		m.head = onlineHead{Seq: seq, Hash: hash, text: text}
	}
	m.loaded = true
	return nil
}

// Before returns the memory step 2 of conversation c (ingest position seq)
// receives, first learning from c when the chain has not passed it yet. tc
// is c's cache: the trajectory's analyses are left in it for the operators.
func (m *OnlineMemory) Before(ctx context.Context, seq int64, c *conv.Conversation, tc *TokenCache) (Memory, error) {
	if !m.mu.TryLock() {
		return Memory{}, errors.New("online memory: conversations must be learned from one at a time, in ingest order (run the stage through pipeline.Run, which calls OnlineStage.Chain that way)")
	}
	defer m.mu.Unlock()
	if err := m.load(ctx); err != nil {
		return Memory{}, err
	}
	if st, ok, err := OnlineStepAt(ctx, m.store, m.chain.ID, seq); err != nil {
		return Memory{}, err
	} else if ok {
		text, err := OnlineCheatsheet(ctx, m.store, m.chain.ID, st.Before)
		if err != nil {
			return Memory{}, err
		}
		if seq > m.head.Seq {
			// The step was stored but the run stopped before the head
			// moved: move it now, or the next conversation would learn
			// from the cheatsheet before this one.
			after, err := OnlineCheatsheet(ctx, m.store, m.chain.ID, st.After)
			if err != nil {
				return Memory{}, err
			}
			if err := m.setHead(ctx, onlineHead{Seq: seq, Hash: st.After, text: after}); err != nil {
				return Memory{}, err
			}
		}
		return given(text), nil
	}
	if seq <= m.head.Seq {
		return Memory{}, fmt.Errorf("online memory %s: conversation %s (seq %d) comes before the last one learned from (seq %d) but was never learned from itself; conversations must be curated in ingest order", m.chain.ID, c.ID, seq, m.head.Seq)
	}
	before := m.head
	next, st, err := m.learn(ctx, c, before, tc)
	if err != nil {
		return Memory{}, err
	}
	st.Seq, st.Conv, st.Prev = seq, c.ID, before.Seq
	// Written in this order so that a crash between two writes leaves a
	// chain whose every record points at stored text.
	if st.After != before.Hash {
		if err := m.store.SetMeta(ctx, chainKey(m.chain.ID, "sheet/"+st.After), next); err != nil {
			return Memory{}, err
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return Memory{}, err
	}
	if err := m.store.SetMeta(ctx, stepKey(m.chain.ID, seq), string(b)); err != nil {
		return Memory{}, err
	}
	if err := m.setHead(ctx, onlineHead{Seq: seq, Hash: st.After, text: next}); err != nil {
		return Memory{}, err
	}
	return given(before.text), nil
}

func (m *OnlineMemory) setHead(ctx context.Context, h onlineHead) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := m.store.SetMeta(ctx, chainKey(m.chain.ID, "head"), string(b)); err != nil {
		return err
	}
	m.head = h
	return nil
}

// learn runs one update: the trajectory under the cheatsheet before c, then
// reflection and unify. A failed unit (malformed answer, rejected request)
// skips the conversation; any other error stops the run and nothing is
// stored.
func (m *OnlineMemory) learn(ctx context.Context, c *conv.Conversation, before onlineHead, tc *TokenCache) (string, OnlineStep, error) {
	st := OnlineStep{Before: before.Hash, After: before.Hash, Words: wordCount(before.text)}
	mem := given(before.text)
	sel, _ := selectTurns(c, m.from)
	// Every analysis of the trajectory sees the cheatsheet before c and none
	// of the others, so they are asked at once: the chain is the one part
	// of an online run that cannot spread across conversations, and this
	// keeps its step to about two calls' time instead of two per turn. The
	// results are read in turn order, so the step is the same as one made
	// turn by turn; only when an analysis fails are the later turns' calls
	// made for nothing (the operators would have stopped at the failure).
	//
	// The chain always asks with re-ask counter 0, so `ac3 retry`
	// elsewhere in the stage cannot change what it learns; the operators
	// share these analyses when they ask the same way.
	type analysis struct {
		a   analyze.Analysis
		u   analyze.Usage
		err error
	}
	got := make([]analysis, len(sel))
	var wg sync.WaitGroup
	for i, tr := range sel {
		wg.Go(func() {
			a, u, err := m.an.Analyze(ctx, c, tr.Index, mem.Cheatsheet, 0)
			got[i] = analysis{a, u, err}
		})
	}
	wg.Wait()
	traj := make([]analyze.TurnAnalysis, 0, len(sel))
	for i, tr := range sel {
		a, err := got[i].a, got[i].err
		if tc.Retry() == 0 {
			err = rememberAnalysis(ctx, m.an, mem, tr.Index, tc, a, got[i].u, err)
		}
		if err != nil {
			for _, g := range got[i:] {
				st.Usage.Add(g.u) // the later turns were paid for too
			}
			if _, failed := analyze.Failure(err); failed {
				st.Skipped = fmt.Sprintf("analysis of turn %d failed: %v", tr.Index, err)
				return before.text, st, nil
			}
			return "", st, err
		}
		st.Usage.Add(got[i].u)
		traj = append(traj, analyze.TurnAnalysis{Turn: tr.Index, Analysis: a})
	}
	st.Turns = len(traj)
	if len(traj) == 0 {
		st.Skipped = fmt.Sprintf("no user turn from %d on", m.from)
		return before.text, st, nil
	}
	// Online, the turns are not judged yet: the trajectory has the
	// messages, the analyses and the decision of an operator that edits
	// when issues are found (reset, rewrite), without outcomes.
	tr := analyze.Trajectory{Steps: analyze.Steps(c, traj, Decider(OpReset, Gate{})), Outcome: "not judged yet (online memory learns while curating)"}
	next, takeaways, u, err := m.an.Absorb(ctx, tr, before.text)
	st.Usage.Add(u)
	st.Takeaways = takeaways
	if err != nil {
		if _, failed := analyze.Failure(err); failed {
			st.Skipped = fmt.Sprintf("updating the cheatsheet failed: %v", err)
			return before.text, st, nil
		}
		return "", st, err
	}
	st.After, st.Words = analyze.MemoryHash(next), wordCount(next)
	return next, st, nil
}

func wordCount(s string) int {
	n, in := 0, false
	for _, r := range s {
		space := r == ' ' || r == '\n' || r == '\t' || r == '\r'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// onlineMemoKind names where OnlineStage leaves the conversation's memory in
// its TokenCache for the online operators.
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

func (s *onlineOperator) Contexts(ctx context.Context, c *conv.Conversation, from int, tc *TokenCache) ([]Context, error) {
	v, ok := tc.recall(memoKey{kind: onlineMemoKind})
	if !ok {
		return nil, fmt.Errorf("curating %s with %s: the online memory was not prepared for this conversation (online operators run in an OnlineStage)", c.ID, s.op)
	}
	return newOperator(s.op, s.an, s.gate, s.form, v.(Memory)).Contexts(ctx, c, from, tc)
}

// OnlineByName is ByName for a run with the online memory m: the AC3
// operators (augment, reset, gated-reset, rewrite, with or without
// +constraints) give step 2 the cheatsheet m built from the conversations
// before the one curated; every other strategy is ByName's. A nil m is
// ByName.
func OnlineByName(name string, opts Options, m *OnlineMemory) (Strategy, error) {
	spec, err := parseSpec(name)
	if err != nil {
		return nil, err
	}
	switch spec.Name {
	case OpAugment, OpReset, OpGatedReset, OpRewrite:
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
		version: newOperator(spec.Name, opts.Analyzer, g, f, Memory{}).Version() + ";memory=online:" + m.chain.ID}
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
// memory up to its conversation (OnlineMemory.Before), then curates as
// Stage does. It is a pipeline.ChainStage: the engine brings the memory up
// to one conversation at a time, in ingest order, and curates conversations
// whose memory is ready concurrently with the chain moving on.
type OnlineStage struct {
	*Stage
	mem *OnlineMemory

	// In batch mode the chain stops for the pass at the first conversation
	// whose learning waits for a batch (held, at heldAt): the conversations
	// after it cannot know their cheatsheet yet. See Chain.
	mu     sync.Mutex
	held   bool
	heldAt int64
}

// NewOnlineStage returns the stage for strategies (built with OnlineByName
// and m), curating turns from m's `from` on.
func NewOnlineStage(strategies []Strategy, counter *tokens.Counter, m *OnlineMemory) *OnlineStage {
	return &OnlineStage{Stage: NewStage(strategies, counter, m.from), mem: m}
}

// Memory returns the stage's online memory.
func (s *OnlineStage) Memory() *OnlineMemory { return s.mem }

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
// the conversation. The returned function owns t's token cache; it may run
// while Chain moves on to later conversations.
func (s *OnlineStage) Chain(ctx context.Context, t pipeline.Task) (func(context.Context) ([]pipeline.Result, error), error) {
	uses := slices.ContainsFunc(t.Variants, func(v pipeline.Variant) bool {
		st, ok := s.byName[v.Name]
		return ok && UsesOnlineMemory(st)
	})
	if !uses {
		return func(ctx context.Context) ([]pipeline.Result, error) { return s.Stage.Process(ctx, t) }, nil
	}
	tc := s.tokenCache(t)
	if s.heldBefore(t.Seq) {
		// An earlier conversation's learning waits for a batch, so this
		// one's cheatsheet is not known: only what reads none is asked.
		wait := fmt.Errorf("curating %s: the online memory waits for an earlier conversation's batch answers: %w", t.Conv.ID, llm.ErrDeferred)
		return func(ctx context.Context) ([]pipeline.Result, error) { return nil, s.askAhead(ctx, t, tc, true, wait) }, nil
	}
	m, err := s.mem.Before(ctx, t.Seq, t.Conv, tc)
	if errors.Is(err, llm.ErrDeferred) {
		s.hold(t.Seq)
		wait := fmt.Errorf("curating %s: %w", t.Conv.ID, err)
		return func(ctx context.Context) ([]pipeline.Result, error) { return nil, s.askAhead(ctx, t, tc, false, wait) }, nil
	}
	if err != nil {
		return nil, fmt.Errorf("curating %s: %w", t.Conv.ID, err)
	}
	tc.remember(memoKey{kind: onlineMemoKind}, m)
	return func(ctx context.Context) ([]pipeline.Result, error) { return s.processWith(ctx, t, tc) }, nil
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
func (s *OnlineStage) askAhead(ctx context.Context, t pipeline.Task, tc *TokenCache, firstSteps bool, wait error) error {
	if firstSteps {
		var d deferrals
		sel, _ := selectTurns(t.Conv, s.mem.from)
		for _, tr := range sel {
			// The chain asks with re-ask counter 0 (see learn).
			_, err := s.mem.an.FirstStep(ctx, t.Conv, tr.Index, 0)
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
		if _, err := s.processWith(ctx, rest, tc); err != nil && !errors.Is(err, llm.ErrDeferred) {
			return err
		}
	}
	return wait
}
