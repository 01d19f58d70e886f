package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/analyze"
)

// MetaOffline is the settings key of the run's frozen cheatsheet (the
// offline regime), a JSON Offline.
const MetaOffline = "ac3.memory.offline"

// Offline is the frozen cheatsheet LearnOffline stores: learned on
// the first Conversations conversations of the run in ingest order (the
// learning split, seqs up to LastSeq), then given unchanged to step 2 of
// every analysis.
type Offline struct {
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
func (m Offline) Memory() Memory { return Memory{Cheatsheet: m.Cheatsheet, Hash: m.Hash} }

// LoadOffline reads the run's frozen cheatsheet; ok is false when the run
// has none.
func LoadOffline(ctx context.Context, store MetaStore) (m Offline, ok bool, err error) {
	return loadJSON[Offline](ctx, store, MetaOffline, "the stored cheatsheet")
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
	// Decisions are the operator's decisions (EDIT / NO EDIT) the
	// reflections see (required; curate.Decisions makes them for an AC3
	// operator and its gate).
	Decisions Decisions
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

// Decisions are what an AC3 operator decides over a conversation, as the
// reflections of offline learning are shown them.
type Decisions struct {
	// Name says which operator and gate decide ("gated-reset floor=2
	// cap=3"); it is part of the cheatsheet's version.
	Name string
	// New returns the decisions of one conversation: called in turn order
	// with each turn's analysis, a fresh one per conversation, it says
	// whether the operator edits the context at that turn.
	New func() func(analyze.TurnAnalysis) bool
}

// Outcomes is what is known of how the answers of one conversation fared:
// a line per judged turn, and a summary of them all.
type Outcomes struct {
	ByTurn  map[int]string
	Summary string
}

// LearnResult says what LearnOffline did.
type LearnResult struct {
	Memory Offline
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
// frozen and stored under MetaOffline. Each reflection sees the
// conversation's trajectory: every turn from opts.From with its user
// message, its analysis (made with no cheatsheet), the operator's decision
// and, with opts.Outcomes, how the answer fared. Requests depend only on
// the conversation, so an interrupted learn replays from the run's cache
// at no cost. Conversations in the split are the run's learning set:
// curation with this cheatsheet leaves them out (see Split).
func LearnOffline(ctx context.Context, an *analyze.Analyzer, store LearnStore, opts LearnOptions) (LearnResult, error) {
	var res LearnResult
	if opts.Decisions.New == nil {
		return res, errors.New("learning the offline cheatsheet: no operator decisions to show the reflections")
	}
	decisions := opts.Decisions.Name
	version := an.Version() + ";" + an.MemoryVersion() + ";" + decisions + ";outcomes=" + opts.OutcomePair
	if old, ok, err := LoadOffline(ctx, store); err != nil {
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
			tk, j, u, err := reflectOn(ctx, an, sc.Conv, opts)
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
	res.Memory = Offline{Cheatsheet: sheet, Hash: analyze.MemoryHash(sheet), Conversations: opts.Conversations, LastSeq: lastSeq, Analyzer: version,
		CostUSD: use.CostUSD, Reflected: len(takeaways), Judged: judged, OutcomePair: opts.OutcomePair, Decisions: decisions}
	res.Calls = use.Calls
	if err := saveJSON(ctx, store, MetaOffline, res.Memory); err != nil {
		return res, err
	}
	return res, nil
}

// reflectOn makes the individual reflection of one conversation; judged is
// whether any of its turns had an outcome.
func reflectOn(ctx context.Context, an *analyze.Analyzer, c *conv.Conversation, opts LearnOptions) (takeaways string, judged bool, use analyze.Usage, err error) {
	tr, use, err := an.Trace(ctx, c, opts.From, "", opts.Decisions.New())
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
