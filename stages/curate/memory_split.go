package curate

import (
	"context"
	"encoding/json"
	"fmt"
)

// MetaMemorySplit is the settings key of the run's learning split (JSON
// MemorySplit), written when curation uses the offline cheatsheet, so the
// report can leave the learning conversations out and say so.
const MetaMemorySplit = "ac3.memory.split"

// MemorySplit says which conversations the offline cheatsheet was learned
// on (the first Conversations in ingest order, seqs up to LastSeq) and
// whether the run left them out of curation with the cheatsheet and of the
// report (Excluded), or was forced to keep them.
type MemorySplit struct {
	Conversations int    `json:"conversations"`
	LastSeq       int64  `json:"last_seq"`
	Hash          string `json:"hash"` // the cheatsheet's
	Excluded      bool   `json:"excluded"`
}

// MetaReader reads a run's settings by key (the reading half of
// MetaStore), for readers such as the report.
type MetaReader interface {
	Meta(ctx context.Context, key string) (string, bool, error)
}

// SplitOf is the split of offline memory m, excluded unless include.
func SplitOf(m OfflineMemory, include bool) MemorySplit {
	return MemorySplit{Conversations: m.Conversations, LastSeq: m.LastSeq, Hash: m.Hash, Excluded: !include}
}

// SaveMemorySplit records s in the run.
func SaveMemorySplit(ctx context.Context, store MetaStore, s MemorySplit) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := store.SetMeta(ctx, MetaMemorySplit, string(b)); err != nil {
		return fmt.Errorf("recording the memory's learning split: %w", err)
	}
	return nil
}

// LoadMemorySplit reads the run's learning split; ok is false when the run
// has none (no curation with an offline cheatsheet yet).
func LoadMemorySplit(ctx context.Context, store MetaReader) (s MemorySplit, ok bool, err error) {
	raw, ok, err := store.Meta(ctx, MetaMemorySplit)
	if err != nil || !ok {
		return s, false, err
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return s, false, fmt.Errorf("reading the memory's learning split: %w", err)
	}
	return s, true, nil
}

// UsesOfflineMemory reports whether st is given a frozen cheatsheet (an
// AC3 operator built with Options.Memory), with or without an overlay.
func UsesOfflineMemory(st Strategy) bool {
	switch v := st.(type) {
	case *constraintsOverlay:
		return UsesOfflineMemory(v.inner)
	case *Operator:
		return v.memory.Hash != ""
	}
	return false
}

// WithLearningSplit makes the strategies that use the offline cheatsheet
// leave out the conversations it was learned on (seq <= upTo): they record
// no context there, so nothing downstream (respond, judge) has theirs to
// work on, and results are measured only on conversations the cheatsheet
// did not learn from. The split goes into those strategies' versions, so
// forcing the learning conversations back in (upTo 0, the default) keys
// them apart. It returns s.
func (s *Stage) WithLearningSplit(upTo int64) *Stage {
	s.learnedUpTo = max(upTo, 0)
	return s
}

// excluded reports whether strategy st leaves conversation seq out.
func (s *Stage) excluded(st Strategy, seq int64) bool {
	return s.learnedUpTo > 0 && seq <= s.learnedUpTo && UsesOfflineMemory(st)
}

// splitTag is what the learning split adds to st's version.
func (s *Stage) splitTag(st Strategy) string {
	if s.learnedUpTo > 0 && UsesOfflineMemory(st) {
		return fmt.Sprintf(";eval>%d", s.learnedUpTo)
	}
	return ""
}
