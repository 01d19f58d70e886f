package run

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/ac3/ac3/stages/curate/policy"
)

// WriteText prints the fitted policy as 'ac3 policy fit' shows it: the
// judged turns it learned from, the fit and its held-out scores, the τ that
// agrees best with the judge, the coefficients, and the curate command
// that uses it.
func (fit PolicyFit) WriteText(w io.Writer) {
	p := fit.Policy
	f := p.Fit
	fmt.Fprintf(w, "policy %s fitted on %d judged turns (fc won %d, lost %d, tied %d; ties as %s; mean assistant history %.0f tokens)\n",
		p.Hash(), p.N, f.Wins, f.Losses, f.TiesN, f.Ties, p.MeanAsstTokens)
	fmt.Fprintf(w, "L1 logistic, %s classes, strength by %d-fold CV on %s (folds by %s): λ = %.4g (C = %.4g), %d of %d coefficients kept\n",
		f.Classes, f.Folds, f.Metric, f.FoldsBy, f.Lambda, f.C, f.NonZero, len(p.Features))
	fmt.Fprintf(w, "held out: accuracy %.1f%% ± %.1f (majority class %.1f%%), balanced accuracy %.1f%%, F1 %.3f; training accuracy %.1f%%\n",
		100*f.HeldOut.Accuracy, 100*f.HeldOut.SD, 100*f.Majority, 100*f.HeldOut.BalancedAccuracy, f.HeldOut.F1, 100*p.TrainAccuracy)
	fmt.Fprintf(w, "τ = %.3f: keep fc iff P(fc wins) ≥ τ agrees with the judge on %.1f%% of held-out turns (at λ cost 0)\n", f.Tau, 100*f.TauAccuracy)
	for _, x := range []struct {
		name string
		f    policy.Figures
	}{{"in sample", f.InSample}, {"cross-fitted", f.CrossFitted}} {
		fmt.Fprintf(w, "%s: keeps fc on %.1f%% of turns, win rate vs always-fc %.1f%% (%.1f%% of fc's quality) at %.1f%% of its context tokens\n",
			x.name, 100*x.f.FCShare, 100*x.f.WinRateVsFC, 100*x.f.QualityRetained, 100*x.f.TokenShare)
	}
	width := 16
	for _, name := range p.Features {
		width = max(width, len(name))
	}
	fmt.Fprintf(w, "  %-*s %+.3f\n", width, "(bias)", p.Weights[0])
	order := make([]int, len(p.Features))
	for i := range order {
		order[i] = i
	}
	if p.Paper() {
		// 47 features: the kept ones by size, at most 20, as Huang et
		// al.'s Table 5 lists them.
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(math.Abs(p.Weights[b+1]), math.Abs(p.Weights[a+1])) })
		order = slices.DeleteFunc(order, func(i int) bool { return p.Weights[i+1] == 0 })
		order = order[:min(len(order), 20)]
		fmt.Fprintf(w, "  (features of Huang et al. A.15: embeddings by %s cut at %d tokens, %d and %d principal components; the %d largest kept coefficients)\n",
			p.Embedder, p.EmbedMaxTokens, len(p.PromptPCA.Components), len(p.HistoryPCA.Components), len(order))
	}
	for _, i := range order {
		fmt.Fprintf(w, "  %-*s %+.3f\n", width, p.Features[i], p.Weights[i+1])
	}
	if !fit.WithTypes {
		fmt.Fprintln(w, "  (no classify stage in this run: turn-type and reference features were zero)")
	}
	fmt.Fprintf(w, "use it with: ac3 curate --strategies adaptive --adaptive-policy scored --tau %.3f [--lambda L]\n", f.Tau)
}

// WriteText prints what 'ac3 memory learn' did: skipped, reused, stopped
// (nothing stored) or the cheatsheet learned.
func (res Learning) WriteText(w io.Writer) {
	rec := res.Memory
	switch {
	case res.Skipped != "":
		fmt.Fprintf(w, "memory learn: skipped: %s\n", res.Skipped)
	case res.Reused:
		fmt.Fprintf(w, "memory learn: this run already has cheatsheet %s learned on its first %d conversations (--again to learn it anew)\n", rec.Hash, rec.Conversations)
	case res.Stopped != nil:
		fmt.Fprintf(w, "memory learn: stopped at conversation %d: %v; nothing stored; run again with a higher --budget-usd (answers so far are cached)\n", res.Learned+1, res.Stopped)
	default:
		fmt.Fprintf(w, "memory learn: cheatsheet %s (%d words) learned on %d conversations (up to seq %d) with %d calls ($%.4f); use it with 'ac3 curate --memory offline'\n",
			rec.Hash, len(strings.Fields(rec.Cheatsheet)), res.Learned, rec.LastSeq, res.Calls, rec.CostUSD)
	}
}
