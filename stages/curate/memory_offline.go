package curate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/analyze"
)

// MetaOfflineMemory is the settings key of the run's frozen cheatsheet (the
// offline regime), a JSON OfflineMemory.
const MetaOfflineMemory = "ac3.memory.offline"

// OfflineMemory is the frozen cheatsheet LearnOffline stores: learned on
// the first Conversations conversations of the run in ingest order, then
// given unchanged to step 2 of every analysis.
type OfflineMemory struct {
	Cheatsheet    string  `json:"cheatsheet"`
	Hash          string  `json:"hash"`
	Conversations int     `json:"conversations"` // the split: the first N conversations in ingest order
	LastSeq       int64   `json:"last_seq"`
	Analyzer      string  `json:"analyzer"`
	CostUSD       float64 `json:"cost_usd"`
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
	// OnConversation is called after each conversation with the usage of
	// its calls; OnSkip when the analyzer could not read one (it then
	// teaches nothing and the cheatsheet stays as it was).
	OnConversation func(analyze.Usage)
	OnSkip         func(convID string, err error)
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

// LearnOffline learns the offline cheatsheet: it goes through the first
// opts.Conversations conversations of the run in ingest order, lets the
// analyzer learn from each (analyses of every turn from opts.From, one
// reflection, one unify), freezes the result and stores it under
// MetaOfflineMemory. The order is fixed and each request depends only on
// the conversation and the cheatsheet before it, so an interrupted learn
// replays from the run's cache at no cost.
func LearnOffline(ctx context.Context, an *analyze.Analyzer, store LearnStore, opts LearnOptions) (LearnResult, error) {
	var res LearnResult
	version := an.Version() + ";" + an.MemoryVersion()
	if old, ok, err := LoadOfflineMemory(ctx, store); err != nil {
		return res, err
	} else if ok && !opts.Again && old.Conversations == opts.Conversations && old.Analyzer == version {
		return LearnResult{Memory: old, Reused: true}, nil
	}
	var (
		sheet   string
		use     analyze.Usage
		lastSeq int64
		after   int64
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
			next, u, err := an.Learn(ctx, sc.Conv, opts.From, sheet)
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
				next, err = sheet, nil
			}
			if err != nil {
				return res, fmt.Errorf("learning from conversation %s: %w", sc.Conv.ID, err)
			}
			sheet = next
			res.Learned++
			lastSeq = sc.Seq
		}
		after = page[len(page)-1].Seq
	}
	res.Memory = OfflineMemory{Cheatsheet: sheet, Hash: analyze.MemoryHash(sheet), Conversations: opts.Conversations, LastSeq: lastSeq, Analyzer: version, CostUSD: use.CostUSD}
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
