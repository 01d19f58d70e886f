package report

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// capital upper-cases the first letter of a sentence.
func capital(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func itoa(n int) string { return strconv.Itoa(n) }

// mdNoCall writes, per pair, how many comparisons were settled as ties
// without a call and how many of them because both strategies built the
// same context.
func (r *Report) mdNoCall(b *mdWriter) {
	b.f("**Ties without a call.** When both answers are identical the comparison is a tie and the judge is not asked; this mostly happens when both strategies built the same context for the turn (a gate that stayed closed gives fc's context).\n\n")
	b.f("| pair | comparisons | same context | ties without a call | of them same context |\n|---|---:|---:|---:|---:|\n")
	for _, p := range r.Pairs {
		b.f("| %s | %d | %d | %d | %d |\n", p.Pair, p.Comparisons, p.SameContext, p.Identical, p.SameContextNoCall)
	}
	b.f("\n")
}

// mdLengthControlled writes the length-controlled win rates.
func (r *Report) mdLengthControlled(b *mdWriter) {
	b.f("## Length-controlled win rates\n\n")
	b.f("%s. The slope is per unit of the normalised length difference (positive: the judge favoured the longer answer); scale is the standard deviation of A's minus B's answer length in characters.\n\n", capital(r.Settings.LengthControl))
	b.f("| pair | dimension | n | win rate A | LC win rate A | %s CI (bootstrap) | slope | scale | convs | note |\n|---|---|---:|---:|---:|---|---:|---:|---:|---|\n", pct(r.Settings.Level))
	for _, p := range r.Pairs {
		for _, d := range p.Dimensions {
			l := d.LengthControlled
			if l == nil {
				continue
			}
			b.f("| %s | %s | %d | %s | %s | %s | %s | %s | %d | %s |\n", p.Pair, d.Dimension, l.N, pct(l.WinRate), pct(l.LCWinRate), ivl(l.CI), fix(l.Slope, 3), fix(l.Scale, 0), l.Conversations, esc(lcNote(l)))
		}
	}
	b.f("\n")
}

func lcNote(l *LengthControlled) string {
	s := l.Warning
	if l.NoLength > 0 {
		if s != "" {
			s += "; "
		}
		s += itoa(l.NoLength) + " verdicts without answer lengths left out"
	}
	return s
}

// mdArms writes the McNemar tests between arms.
func (r *Report) mdArms(b *mdWriter) {
	if len(r.Arms) == 0 {
		return
	}
	b.f("## Arms against a common reference\n\n")
	b.f("%s. Turns of one conversation are treated as independent, so p is optimistic when conversations have many turns.\n\n", capital(r.Settings.ArmTest))
	b.f("| dimension | reference | X | Y | context | turns | X beat ref | Y beat ref | X − Y | X only | Y only | McNemar p | invalid |\n|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range r.Arms {
		b.f("| %s | %s | %s | %s | %s | %d | %s | %s | %s | %d | %d | %s | %d |\n", a.Dimension, a.Reference, a.X, a.Y, a.Context, a.Turns, pct(a.XRate), pct(a.YRate), pct(a.Diff), a.XBetter, a.YBetter, pval(a.P), a.Invalid)
	}
	b.f("\n")
}

// labellerNote says how far the heuristic's turn-type shares can be
// trusted, with the labelled set the figures come from.
func labellerNote(q *LabellerQuality) string {
	s := "These turn types come from the rule-based heuristic labeller. Measured on " + q.Set + " (" + itoa(q.N) + " turns, not used to tune it): it gives a type to " +
		pct(q.Coverage) + " of turns (coverage; the rest are `unknown`) and is right on " + pct(q.Accuracy) + " of those (accuracy), against " +
		pct(q.MajorityRateLabelled) + " for always answering the most common type; macro-F1 " + fix(q.MacroF1, 2) + "."
	if !q.Applies {
		s += " Those figures are for " + q.Annotator + "; this run's heuristic is another version and has not been measured."
	}
	return s
}
