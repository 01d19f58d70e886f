package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ac3/ac3/pipeline/conv"
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

// Online is one chain of the online regime; see the comment above. Its
// conversations must be taken one at a time in ingest order (the engine
// calls curate.OnlineStage.Chain that way); it refuses overlapping or
// out-of-order updates rather than make a result that depends on timing.
type Online struct {
	an    *analyze.Analyzer
	store MetaStore
	from  int
	chain OnlineChain

	mu     sync.Mutex
	loaded bool
	head   onlineHead
}

// defaultFrom is the chain's first turn when none is given: curate's
// DefaultFrom, since turn 1 has no history to learn from.
const defaultFrom = 2

// NewOnline returns the chain for analyzer an learning from turns >= from
// (curate.DefaultFrom when 0), stored in store. store may be nil for a
// memory that only reports its version (dry runs).
func NewOnline(an *analyze.Analyzer, store MetaStore, from int) *Online {
	if from <= 0 {
		from = defaultFrom
	}
	ch := OnlineChain{Analyzer: an.Version(), Memory: an.MemoryVersion(), From: from}
	h := sha256.New()
	for _, s := range []string{onlineVersion, ch.Analyzer, ch.Memory, fmt.Sprint(ch.From), fmt.Sprint(analyze.MaxCheatsheetWords)} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	ch.ID = hex.EncodeToString(h.Sum(nil)[:6])
	return &Online{an: an, store: store, from: from, chain: ch}
}

// Chain describes the chain; its ID is in the online operators' versions.
func (m *Online) Chain() OnlineChain { return m.chain }

// From is the first user turn the chain analyzes.
func (m *Online) From() int { return m.from }

// Analyzer is the analyzer the chain learns with.
func (m *Online) Analyzer() *analyze.Analyzer { return m.an }

func chainKey(chain, rest string) string { return MetaOnlineChains + "/" + chain + "/" + rest }

func stepKey(chain string, seq int64) string { return chainKey(chain, fmt.Sprintf("step/%020d", seq)) }

// OnlineChains lists the online chains a run has used.
func OnlineChains(ctx context.Context, store MetaStore) ([]OnlineChain, error) {
	out, _, err := loadJSON[[]OnlineChain](ctx, store, MetaOnlineChains, "the online memory chains")
	if err != nil {
		return nil, err
	}
	return out, nil
}

// OnlineHead returns the last step of chain: the seq of the conversation
// it learned from and the hash of the cheatsheet after it; ok is false for
// a chain that never stepped.
func OnlineHead(ctx context.Context, store MetaStore, chain string) (seq int64, hash string, ok bool, err error) {
	h, ok, err := loadJSON[onlineHead](ctx, store, chainKey(chain, "head"), "the head of online memory "+chain)
	if err != nil || !ok {
		return 0, "", false, err
	}
	return h.Seq, h.Hash, true, nil
}

// OnlineStepAt returns the step chain took at conversation seq.
func OnlineStepAt(ctx context.Context, store MetaStore, chain string, seq int64) (OnlineStep, bool, error) {
	st, ok, err := loadJSON[OnlineStep](ctx, store, stepKey(chain, seq), fmt.Sprintf("online memory %s at seq %d", chain, seq))
	if err != nil || !ok {
		return OnlineStep{}, false, err
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
func (m *Online) load(ctx context.Context) error {
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
		if err := saveJSON(ctx, m.store, MetaOnlineChains, append(chains, m.chain)); err != nil {
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

// Keep is given each analysis the chain makes of a conversation's turn
// (with the memory it was made with, what it cost and its error) and
// returns the error the chain goes on with. The curate stage keeps them for
// its operators, which then need not ask again; nil keeps nothing.
type Keep func(given Memory, turn int, a analyze.Analysis, use analyze.Usage, err error) error

// Before returns the memory step 2 of conversation c (ingest position seq)
// receives, first learning from c when the chain has not passed it yet;
// the trajectory's analyses are passed to keep.
func (m *Online) Before(ctx context.Context, seq int64, c *conv.Conversation, keep Keep) (Memory, error) {
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
	next, st, err := m.learn(ctx, c, before, keep)
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
	if err := saveJSON(ctx, m.store, stepKey(m.chain.ID, seq), st); err != nil {
		return Memory{}, err
	}
	if err := m.setHead(ctx, onlineHead{Seq: seq, Hash: st.After, text: next}); err != nil {
		return Memory{}, err
	}
	return given(before.text), nil
}

func (m *Online) setHead(ctx context.Context, h onlineHead) error {
	if err := saveJSON(ctx, m.store, chainKey(m.chain.ID, "head"), h); err != nil {
		return err
	}
	m.head = h
	return nil
}

// learn runs one update: the trajectory under the cheatsheet before c, then
// reflection and unify. A failed unit (malformed answer, rejected request)
// skips the conversation; any other error stops the run and nothing is
// stored.
func (m *Online) learn(ctx context.Context, c *conv.Conversation, before onlineHead, keep Keep) (string, OnlineStep, error) {
	st := OnlineStep{Before: before.Hash, After: before.Hash, Words: wordCount(before.text)}
	mem := given(before.text)
	sel := turnsFrom(c, m.from)
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
		if keep != nil {
			err = keep(mem, tr.Index, a, got[i].u, err)
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
	tr := analyze.Trajectory{Steps: analyze.Steps(c, traj, editsOnIssues), Outcome: "not judged yet (online memory learns while curating)"}
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

// editsOnIssues is the decision of an operator with no floor and no cap
// that edits when the analysis finds issues (reset, rewrite): the decisions
// the online trajectory shows (curate.Decider of reset with a zero gate).
func editsOnIssues(t analyze.TurnAnalysis) bool { return t.HasIssues() }

// turnsFrom returns the turns of c numbered from or later (from < 1 counts
// as 1).
func turnsFrom(c *conv.Conversation, from int) []conv.Turn {
	all := c.Turns()
	from = max(from, 1)
	if from > len(all) {
		return nil
	}
	return all[from-1:]
}
