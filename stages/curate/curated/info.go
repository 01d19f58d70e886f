package curated

import (
	"github.com/ac3/ac3/stages/analyze"
)

// Info is what a model-backed strategy (or an overlay) records beside a
// curated context: what it decided at this turn, the analysis it decided
// on, and what that cost. Deterministic strategies leave it zero, and a zero
// Info is not stored, so their encoded contexts are unchanged.
//
// The fields, as stored under "a" in the encoded context:
//
//   - Operator: the strategy that decided: an AC3 operator (OpAugment,
//     OpReset, OpGatedReset, OpRewrite), "sum", "adaptive", … (under the
//     +constraints overlay, the strategy it overlays).
//   - Action: what it did at this turn. AC3 operators: "augment" (analysis
//     appended), "reset" (history replaced by the template), "rewrite"
//     (history replaced by the rewritten briefing), "pass" (analysis found no
//     issues; context unchanged), "continue" (no new reset; the context
//     continues from an earlier reset or rewrite), "warmup"/"floor" (turn
//     before the operator starts; no analysis), "cap" (reset cap reached; no
//     analysis). sum: "summarize". adaptive: "fc" or "ao".
//   - GateOpen: the operator changed the context at this turn (augment,
//     reset, rewrite; adaptive choosing ao).
//   - Resets: resets (or rewrites) so far in this conversation, this turn's
//     included.
//   - Analyzed and Analysis: whether the analyzer ran for this turn and its
//     result (spec, aligned, issues; "ABLATION:…" when an ablated analyzer
//     produced it).
//   - AnalysisUsage: the calls, tokens and dollars the analysis of this turn
//     took. Every AC3 operator of a run reuses one analysis per turn, so each
//     records the same numbers; a call answered from the run's cache shows
//     under Cached and costs nothing.
//   - OperatorUsage: calls of the strategy's own (the rewrite call, the
//     summaries first needed at this turn).
//   - Memory: the cheatsheet step 2 was given: the frozen offline
//     cheatsheet's hash, or "online:<hash>" for the version the online regime had
//     built from earlier conversations ("online:none" before the first
//     update), "" without memory.
//   - TurnType, Score: adaptive's inputs (classify type; P(fc wins) − λ·Δ).
//   - Constraints: how many session constraints the +constraints overlay
//     appended (0: none were in force, so no block was added).
type Info struct {
	Operator      string           `json:"op,omitempty"`
	Action        string           `json:"action,omitempty"`
	GateOpen      bool             `json:"gate,omitempty"`
	Resets        int              `json:"resets,omitempty"`
	Analyzed      bool             `json:"analyzed,omitempty"`
	Analysis      analyze.Analysis `json:"analysis,omitzero"`
	AnalysisUsage analyze.Usage    `json:"analysis_usage,omitzero"`
	OperatorUsage analyze.Usage    `json:"operator_usage,omitzero"`
	Memory        string           `json:"memory,omitempty"`
	TurnType      string           `json:"turn_type,omitempty"`
	Scored        bool             `json:"scored,omitempty"`
	Score         float64          `json:"score,omitempty"`
	Constraints   int              `json:"constraints,omitempty"`
}

// IsZero reports whether nothing is recorded.
func (i Info) IsZero() bool { return i == Info{} }

// Usage is the total of the analysis and operator calls.
func (i Info) Usage() analyze.Usage {
	u := i.AnalysisUsage
	u.Add(i.OperatorUsage)
	return u
}

// The AC3 operators, by the names strategies and Info.Operator give them.
const (
	OpAugment    = "augment"
	OpReset      = "reset"
	OpGatedReset = "gated-reset"
	OpRewrite    = "rewrite"
)

// Actions of the AC3 operators and of sum and adaptive; see Info.
const (
	ActionAugment  = "augment"
	ActionReset    = "reset"
	ActionRewrite  = "rewrite"
	ActionPass     = "pass"
	ActionContinue = "continue"
	ActionWarmup   = "warmup"
	ActionFloor    = "floor"
	ActionCap      = "cap"
)
