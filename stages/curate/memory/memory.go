package memory

import (
	"context"
	"encoding/json"
	"fmt"
)

// Memory is the cheatsheet step 2 of an analysis is given, as the AC3
// operators take it: the frozen offline cheatsheet (Offline.Memory), or the
// online one as it stood before a conversation (Online.Before). Hash
// identifies it in unit keys; see analyze.MemoryHash.
type Memory struct {
	Cheatsheet string
	Hash       string
}

// MetaStore keeps a run's settings by key. *ledger.Ledger satisfies it.
type MetaStore interface {
	Meta(ctx context.Context, key string) (string, bool, error)
	SetMeta(ctx context.Context, key, value string) error
}

// MetaReader reads a run's settings by key (the reading half of
// MetaStore), for readers such as the report.
type MetaReader interface {
	Meta(ctx context.Context, key string) (string, bool, error)
}

// loadJSON reads the setting key, a JSON T, as every stored piece of the
// memory is read; ok is false when the run has none. what names the value
// in the error when it does not decode.
func loadJSON[T any](ctx context.Context, store MetaReader, key, what string) (v T, ok bool, err error) {
	raw, ok, err := store.Meta(ctx, key)
	if err != nil || !ok {
		return v, false, err
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return v, false, fmt.Errorf("reading %s: %w", what, err)
	}
	return v, true, nil
}

// saveJSON stores v as JSON under the setting key.
func saveJSON(ctx context.Context, store MetaStore, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return store.SetMeta(ctx, key, string(b))
}
