package report

import (
	"context"
	"fmt"
	"html"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/curate/memory"
	"github.com/ac3/ac3/stages/curate/policy"
)

// metaSource is a Source that also keeps run settings (*ledger.Ledger
// does); the report reads what the run learned from itself through it.
type metaSource interface {
	Meta(ctx context.Context, key string) (string, bool, error)
}

// MemorySplit is the offline memory's learning split as the report used
// it: the first Conversations conversations (seq <= LastSeq) taught the
// cheatsheet; when Excluded they are left out of every number here.
type MemorySplit struct {
	Cheatsheet    string `json:"cheatsheet"`
	Conversations int    `json:"conversations"`
	LastSeq       int64  `json:"last_seq"`
	Excluded      bool   `json:"excluded"`
	// Evaluated is the number of conversations the report covers.
	Evaluated int64 `json:"evaluated"`
}

// AdaptivePolicy is the scored adaptive policy fitted on this run ('ac3
// policy fit'): how it was fitted and how well it predicts held-out turns.
type AdaptivePolicy struct {
	Hash           string `json:"hash"`
	Turns          int    `json:"turns"`
	Method         string `json:"method"`
	Ties           string `json:"ties"`
	Classes        string `json:"classes"`
	Metric         string `json:"metric"`
	Folds          int    `json:"folds"`
	FoldsBy        string `json:"folds_by"`
	Lambda         Num    `json:"lambda"`
	C              Num    `json:"c"`
	NonZero        int    `json:"nonzero"`
	Features       int    `json:"features"`
	HeldOutAcc     Num    `json:"held_out_accuracy"`
	HeldOutSD      Num    `json:"held_out_sd"`
	HeldOutBalAcc  Num    `json:"held_out_balanced_accuracy"`
	HeldOutF1      Num    `json:"held_out_f1"`
	Majority       Num    `json:"majority"`
	Tau            Num    `json:"tau"`
	TauAccuracy    Num    `json:"tau_accuracy"`
	FCWinRate      Num    `json:"fc_win_rate"`
	Wins           int    `json:"wins"`
	Losses         int    `json:"losses"`
	TiesN          int    `json:"ties_n"`
	TrainingAcc    Num    `json:"training_accuracy"`
	MeanAsstTokens Num    `json:"mean_assistant_tokens"`
	// InSample and CrossFitted are the rule at τ on the judged turns,
	// scored by the fitted weights and by the fold fit that held each
	// turn out (policy.Figures).
	InSample    PolicyFigures `json:"in_sample"`
	CrossFitted PolicyFigures `json:"cross_fitted"`
	// FeatureSet is "paper" for a policy on Huang et al.'s features (with
	// Embedder, the model that embedded them); empty for ours.
	FeatureSet string `json:"feature_set,omitempty"`
	Embedder   string `json:"embedder,omitempty"`
}

// PolicyFigures are policy.Figures as the report gives them.
type PolicyFigures struct {
	Turns           int `json:"turns"`
	FCShare         Num `json:"fc_share"`
	WinRateVsFC     Num `json:"win_rate_vs_fc"`
	QualityRetained Num `json:"quality_retained"`
	TokenShare      Num `json:"token_share"`
}

func policyFigures(f policy.Figures) PolicyFigures {
	return PolicyFigures{Turns: f.Turns, FCShare: Num(f.FCShare), WinRateVsFC: Num(f.WinRateVsFC), QualityRetained: Num(f.QualityRetained), TokenShare: Num(f.TokenShare)}
}

// learned reads the run's learning split and fitted policy (nothing when
// src keeps no settings).
func learned(ctx context.Context, src Source) (*MemorySplit, *AdaptivePolicy, error) {
	ms, ok := src.(metaSource)
	if !ok {
		return nil, nil, nil
	}
	var split *MemorySplit
	s, ok, err := memory.LoadSplit(ctx, ms)
	if err != nil {
		return nil, nil, err
	}
	if ok {
		split = &MemorySplit{Cheatsheet: s.Hash, Conversations: s.Conversations, LastSeq: s.LastSeq, Excluded: s.Excluded}
	}
	p, err := policy.Load(ctx, ms)
	if err != nil || p == nil || p.Fit == nil {
		return split, nil, err
	}
	f := p.Fit
	set := ""
	if p.Paper() {
		set = policy.FeaturesPaper
	}
	return split, &AdaptivePolicy{FeatureSet: set,
		Hash: p.Hash(), Turns: p.N, Method: f.Method, Ties: f.Ties, Classes: f.Classes, Metric: f.Metric, Folds: f.Folds, FoldsBy: f.FoldsBy,
		Lambda: Num(f.Lambda), C: Num(f.C), NonZero: f.NonZero, Features: len(p.Features),
		HeldOutAcc: Num(f.HeldOut.Accuracy), HeldOutSD: Num(f.HeldOut.SD), HeldOutBalAcc: Num(f.HeldOut.BalancedAccuracy), HeldOutF1: Num(f.HeldOut.F1),
		Majority: Num(f.Majority), Tau: Num(f.Tau), TauAccuracy: Num(f.TauAccuracy), FCWinRate: Num(p.FCWinRate),
		Wins: f.Wins, Losses: f.Losses, TiesN: f.TiesN, TrainingAcc: Num(p.TrainAccuracy), MeanAsstTokens: Num(p.MeanAsstTokens),
		InSample: policyFigures(f.InSample), CrossFitted: policyFigures(f.CrossFitted), Embedder: p.Embedder,
	}, nil
}

// evalPages wraps a page callback so it sees only conversations after the
// learning split when the split is excluded.
func (s *MemorySplit) evalPages(fn func(page []ledger.Stored, after, upto int64) error) func(page []ledger.Stored, after, upto int64) error {
	if s == nil || !s.Excluded {
		return fn
	}
	return func(page []ledger.Stored, after, upto int64) error {
		if upto <= s.LastSeq {
			return nil
		}
		return fn(page, max(after, s.LastSeq), upto)
	}
}

// note is the line the report opens with about the split.
func (s *MemorySplit) note() string {
	if s.Excluded {
		return fmt.Sprintf("offline memory %s was learned on the first %d conversations (seq <= %d); they are left out of this report, which covers the other %d (stages.curate.memory.include_learning: true keeps them)",
			s.Cheatsheet, s.Conversations, s.LastSeq, s.Evaluated)
	}
	return fmt.Sprintf("offline memory %s was learned on the first %d conversations (seq <= %d), and they are kept in this report (include_learning): numbers on them flatter the memory",
		s.Cheatsheet, s.Conversations, s.LastSeq)
}

func (p *AdaptivePolicy) lines() []string {
	return []string{
		fmt.Sprintf("Policy %s, fitted on %d judged fc-vs-ao turns (fc won %d, lost %d, tied %d; ties as %s; fc win rate %s).", p.Hash, p.Turns, p.Wins, p.Losses, p.TiesN, p.Ties, pct(p.FCWinRate)),
		fmt.Sprintf("%s, %s classes; strength chosen by %d-fold cross-validation on %s (folds by %s): λ = %s (C = %s), %d of %d coefficients kept%s.", p.Method, p.Classes, p.Folds, p.Metric, p.FoldsBy, num4(p.Lambda), num4(p.C), p.NonZero, p.Features, p.featureNote()),
		fmt.Sprintf("Held out: accuracy %s ± %s (always the commoner label: %s), balanced accuracy %s, F1 %s; training accuracy %s.", pct(p.HeldOutAcc), pct(p.HeldOutSD), pct(p.Majority), pct(p.HeldOutBalAcc), fix(p.HeldOutF1, 3), pct(p.TrainingAcc)),
		fmt.Sprintf("τ = %s: \"keep fc iff P(fc wins) ≥ τ\" agrees with the judge on %s of held-out turns (cost weight 0).", fix(p.Tau, 3), pct(p.TauAccuracy)),
		p.InSample.line("In sample (the turns it was fitted on, scored by the fitted weights)"),
		p.CrossFitted.line("Cross-fitted (each turn scored by the fold fit that held its conversation out; the adaptive arm scores the fitting conversations this way)"),
	}
}

func (f PolicyFigures) line(what string) string {
	return fmt.Sprintf("%s: keeps fc on %s of %d turns; win rate against always-fc %s (%s of fc's quality) at %s of its context tokens.",
		what, pct(f.FCShare), f.Turns, pct(f.WinRateVsFC), pct(f.QualityRetained), pct(f.TokenShare))
}

func num4(n Num) string {
	if !n.Known() {
		return "—"
	}
	return strings.TrimSpace(fmt.Sprintf("%.4g", float64(n)))
}

// mdLearned writes what the run learned from itself: the adaptive policy.
func (r *Report) mdLearned(b *mdWriter) {
	if r.Policy == nil {
		return
	}
	b.f("## Adaptive policy\n\n")
	for _, l := range r.Policy.lines() {
		b.f("%s\n", l)
	}
	b.f("\n")
}

// htmlLearned is mdLearned in HTML.
func (r *Report) htmlLearned(b *strings.Builder) {
	if r.Policy == nil {
		return
	}
	b.WriteString("<h2>Adaptive policy</h2>\n")
	for _, l := range r.Policy.lines() {
		fmt.Fprintf(b, "<p class=\"meta\">%s</p>\n", html.EscapeString(l))
	}
}

// featureNote names the paper's feature set, and nothing for ours.
func (p *AdaptivePolicy) featureNote() string {
	if p.FeatureSet != policy.FeaturesPaper {
		return ""
	}
	return fmt.Sprintf(" (Huang et al.'s A.15 features, with principal components of %s embeddings)", p.Embedder)
}
