package memory

import (
	"context"
	"encoding/json"
	"fmt"
)

// MetaSplit is the settings key of the run's learning split (JSON Split),
// written when curation uses the offline cheatsheet, so the report can
// leave the learning conversations out and say so.
const MetaSplit = "ac3.memory.split"

// Split says which conversations the offline cheatsheet was learned on (the
// first Conversations in ingest order, seqs up to LastSeq) and whether the
// run left them out of curation with the cheatsheet and of the report
// (Excluded), or was forced to keep them.
type Split struct {
	Conversations int    `json:"conversations"`
	LastSeq       int64  `json:"last_seq"`
	Hash          string `json:"hash"` // the cheatsheet's
	Excluded      bool   `json:"excluded"`
}

// SplitOf is the split of offline memory m, excluded unless include.
func SplitOf(m Offline, include bool) Split {
	return Split{Conversations: m.Conversations, LastSeq: m.LastSeq, Hash: m.Hash, Excluded: !include}
}

// SaveSplit records s in the run.
func SaveSplit(ctx context.Context, store MetaStore, s Split) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := store.SetMeta(ctx, MetaSplit, string(b)); err != nil {
		return fmt.Errorf("recording the memory's learning split: %w", err)
	}
	return nil
}

// LoadSplit reads the run's learning split; ok is false when the run has
// none (no curation with an offline cheatsheet yet).
func LoadSplit(ctx context.Context, store MetaReader) (s Split, ok bool, err error) {
	return loadJSON[Split](ctx, store, MetaSplit, "the memory's learning split")
}
