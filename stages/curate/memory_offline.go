package curate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/analyze"
)

// MetaOfflineMemory is the settings key of the run's frozen cheatsheet (the
// offline regime), a JSON OfflineMemory.
const MetaOfflineMemory = "ac3.memory.offline"

// OfflineMemory is the frozen cheatsheet LearnOffline stores: learned on
// the first Conversations conversations of the run in ingest order (the
// learning split, seqs up to LastSeq), then given unchanged to step 2 of
// every analysis.
type OfflineMemory struct {
	Cheatsheet    string  `json:"cheatsheet"`
	Hash          string  `json:"hash"`
	Conversations int     `json:"conversations"` // the split: the first N conversations in ingest order
	LastSeq       int64   `json:"last_seq"`
	Analyzer      string  `json:"analyzer"`
	CostUSD       float64 `json:"cost_usd"`
	// Reflected counts the conversations an individual reflection was made
	// of; Judged how many of them had at least one judged turn, and
	// OutcomePair the judge pair the outcomes came from ("" for none).
	Reflected   int    `json:"reflected"`
	Judged      int    `json:"judged"`
	OutcomePair string `json:"outcome_pair,omitempty"`
	// Decisions names the operator and gate whose EDIT / NO EDIT decisions
	// the reflections were shown.
	Decisions string `json:"decisions,omitempty"`
}

// Memory is the cheatsheet as the operators take it.
func (m OfflineMemory) Memory() Memory { return Memory{Cheatsheet: m.Cheatsheet, Hash: m.Hash} }

// LoadOfflineMemory reads the run's frozen cheatsheet; ok is false when the
// run has none.
func LoadOfflineMemory(ctx context.Context, store MetaStore) (m OfflineMemory, ok bool, err error) {
	raw, ok, err := store.Meta(ctx, MetaOfflineMemory)
	if err != nil || !ok {
		return m, false, err
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return m, false, fmt.Errorf("reading the stored cheatsheet: %w", err)
	}
	return m, true, nil
}

// LearnStore is what offline learning reads and writes: the run's
// conversations in ingest order and its settings. *ledger.Ledger satisfies
// it.
type LearnStore interface {
	MetaStore
	ConversationPage(ctx context.Context, after int64, limit int) ([]ledger.Stored, error)
}

// LearnOptions configure LearnOffline.
type LearnOptions struct {
	Conversations int  // the split: the first N conversations (required)
	From          int  // first user turn analyzed
	Again         bool // learn even if the run has a cheatsheet for this split
	// Operator and Gate say whose decisions (EDIT / NO EDIT) the
	// reflections see: an AC3 operator (default OpGatedReset) and its gate
	// (default DefaultGate of it).
	Operator string
	Gate     *Gate
	// Outcomes, when set, gives each conversation's judged outcomes (see
	// Outcomes); OutcomePair names where they come from.
	Outcomes    func(ctx context.Context, c *conv.Conversation) (Outcomes, error)
	OutcomePair string
	// OnConversation is called after each conversation with the usage of
	// its calls; OnSkip when the analyzer could not read one (it then
	// teaches nothing and the cheatsheet stays as it was).
	OnConversation func(analyze.Usage)
	OnSkip         func(convID string, err error)
}

// Outcomes is what is known of how the answers of one conversation fared:
// a line per judged turn, and a summary of them all.
type Outcomes struct {
	ByTurn  map[int]string
	Summary string
}

// LearnResult says what LearnOffline did.
type LearnResult struct {
	Memory OfflineMemory
	Reused bool // the run already had this split's cheatsheet; nothing was called
	// Stopped is the budget error that stopped learning before the end;
	// nothing is stored then (answers so far are cached in the run).
	Stopped error
	Learned int // conversations learned from
	Calls   int
}

// LearnOffline learns the offline cheatsheet as the AC3 paper's offline
// regime does (its Appendix F): an individual reflection on each of the
// first opts.Conversations conversations of the run in ingest order, then
// one consolidation of all their takeaways into the cheatsheet, which is
// frozen and stored under MetaOfflineMemory. Each reflection sees the
// conversation's trajectory: every turn from opts.From with its user
// message, its analysis (made with no cheatsheet), the operator's decision
// and, with opts.Outcomes, how the answer fared. Requests depend only on
// the conversation, so an interrupted learn replays from the run's cache
// at no cost. Conversations in the split are the run's learning set:
// curation with this cheatsheet leaves them out (see MemorySplit).
func LearnOffline(ctx context.Context, an *analyze.Analyzer, store LearnStore, opts LearnOptions) (LearnResult, error) {
	var res LearnResult
	op := cmp.Or(opts.Operator, OpGatedReset)
	gate := DefaultGate(op)
	if opts.Gate != nil {
		gate = *opts.Gate
	}
	decisions := fmt.Sprintf("%s floor=%d cap=%d", op, gate.Floor, gate.Cap)
	version := an.Version() + ";" + an.MemoryVersion() + ";" + decisions + ";outcomes=" + opts.OutcomePair
	if old, ok, err := LoadOfflineMemory(ctx, store); err != nil {
		return res, err
	} else if ok && !opts.Again && old.Conversations == opts.Conversations && old.Analyzer == version {
		return LearnResult{Memory: old, Reused: true}, nil
	}
	var (
		use       analyze.Usage
		lastSeq   int64
		after     int64
		takeaways []string
		judged    int
	)
	for res.Learned < opts.Conversations {
		page, err := store.ConversationPage(ctx, after, min(256, opts.Conversations-res.Learned))
		if err != nil {
			return res, err
		}
		if len(page) == 0 {
			break
		}
		for _, sc := range page {
			tk, j, u, err := reflectOn(ctx, an, sc.Conv, opts, op, gate)
			use.Add(u)
			if opts.OnConversation != nil {
				opts.OnConversation(u)
			}
			if errors.Is(err, llm.ErrBudgetExceeded) {
				res.Stopped, res.Calls = err, use.Calls
				return res, nil
			}
			if _, failed := analyze.Failure(err); failed {
				// A conversation the analyzer could not read teaches nothing;
				// the order (and so the result) stays deterministic.
				if opts.OnSkip != nil {
					opts.OnSkip(sc.Conv.ID, err)
				}
				tk, err = "", nil
			}
			if err != nil {
				return res, fmt.Errorf("learning from conversation %s: %w", sc.Conv.ID, err)
			}
			if tk != "" {
				takeaways = append(takeaways, tk)
			}
			if j {
				judged++
			}
			res.Learned++
			lastSeq = sc.Seq
		}
		after = page[len(page)-1].Seq
	}
	sheet, u, err := an.Consolidate(ctx, takeaways)
	use.Add(u)
	if errors.Is(err, llm.ErrBudgetExceeded) {
		res.Stopped, res.Calls = err, use.Calls
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.Memory = OfflineMemory{Cheatsheet: sheet, Hash: analyze.MemoryHash(sheet), Conversations: opts.Conversations, LastSeq: lastSeq, Analyzer: version,
		CostUSD: use.CostUSD, Reflected: len(takeaways), Judged: judged, OutcomePair: opts.OutcomePair, Decisions: decisions}
	res.Calls = use.Calls
	b, err := json.Marshal(res.Memory)
	if err != nil {
		return res, err
	}
	if err := store.SetMeta(ctx, MetaOfflineMemory, string(b)); err != nil {
		return res, err
	}
	return res, nil
}

// reflectOn makes the individual reflection of one conversation; judged is
// whether any of its turns had an outcome.
func reflectOn(ctx context.Context, an *analyze.Analyzer, c *conv.Conversation, opts LearnOptions, op string, gate Gate) (takeaways string, judged bool, use analyze.Usage, err error) {
	tr, use, err := an.Trace(ctx, c, opts.From, "", Decider(op, gate))
	if err != nil || len(tr.Steps) == 0 {
		return "", false, use, err
	}
	if opts.Outcomes != nil {
		o, err := opts.Outcomes(ctx, c)
		if err != nil {
			return "", false, use, err
		}
		for i := range tr.Steps {
			if line, ok := o.ByTurn[tr.Steps[i].Turn]; ok {
				tr.Steps[i].Outcome, judged = line, true
			}
		}
		tr.Outcome = o.Summary
	}
	tk, u, err := an.Reflect(ctx, tr, "")
	use.Add(u)
	return tk, judged, use, err
}

// Decider returns the decisions operator op with gate g makes over one
// conversation, turn by turn from its analyses (call it in turn order, a
// fresh one per conversation): augment edits (appends) at every turn past
// its warm-up; reset, gated-reset and rewrite edit at a turn past the floor
// when the analysis finds issues, until the cap.
func Decider(op string, g Gate) func(analyze.TurnAnalysis) bool {
	edits := 0
	return func(t analyze.TurnAnalysis) bool {
		switch {
		case t.Turn <= g.Floor:
			return false
		case op == OpAugment:
			return true
		case g.Cap > 0 && edits >= g.Cap, !t.HasIssues():
			return false
		}
		edits++
		return true
	}
}
