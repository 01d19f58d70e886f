package report

import "encoding/json"

// gateRecord is the part of an AC3 strategy's per-turn record the report
// needs, read from the stored context's "a" object (see Info in
// stages/curate). Reading the stored keys rather than the Go type keeps the
// report working on runs written before or after that type changes.
type gateRecord struct {
	Op     string `json:"op"`
	Action string `json:"action"`
	Gate   bool   `json:"gate"`
}

// gateFromProbe reports whether the gate opened at this turn, and whether
// the turn counts at all: a record must be present and the operator must
// have been active (turns before its warm-up or floor are not decisions).
func gateFromProbe(probe map[string]json.RawMessage) (open, ok bool) {
	raw, has := probe["a"]
	if !has {
		return false, false
	}
	var g gateRecord
	if json.Unmarshal(raw, &g) != nil || g.Op == "" {
		return false, false
	}
	switch g.Action {
	case "warmup", "floor", "":
		return false, false
	}
	return g.Gate, true
}
