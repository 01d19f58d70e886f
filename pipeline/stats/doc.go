// Package stats turns pairwise judge verdicts (strategy A against strategy
// B, one verdict per compared turn) into the numbers the report shows: a win
// rate, intervals, exact tests, breakdowns and position-bias diagnostics.
// It uses the standard library only and never calls a model.
//
// Win rate. For A it is (wins + ties/2) / n, where n counts every verdict with
// a valid outcome; B's win rate is one minus it. A tie is half a win so that
// ties neither help nor hurt either side.
//
// Conversation bootstrap. Turns of one conversation share a topic, a user
// and a context, so their verdicts are correlated and treating them as
// independent gives intervals that are too narrow. ClusterBootstrap therefore
// resamples whole conversations: with K conversations in the data, each of
// Options.Resamples rounds draws K conversations with replacement, pools all
// of their verdicts and computes the win rate of the pool (total score over
// total n, so long conversations weigh more, as they do in the point
// estimate). The interval is the percentile interval: the (1-Level)/2 and
// (1+Level)/2 quantiles of the resampled win rates, with linear interpolation
// between order statistics (R type 7, numpy's default). Conversations are
// visited in sorted order of their ids and draws come from a PCG generator
// seeded with rand.NewPCG(Options.Seed, 0), bounded by Lemire's
// multiply-and-reject method implemented here, so the same verdicts and seed
// give the same interval bit for bit regardless of input order or Go release.
// With few conversations the bootstrap cannot see the spread between them
// and the interval is too narrow; summaries flag that.
//
// Folds. A run can hold millions of verdicts, so callers that stream them
// never collect a slice: Counts.Add tallies outcomes, Cluster.Add folds one
// conversation's verdicts into the two integers the bootstrap needs, and
// SummarizeClusters and BootstrapClusters take those clusters (in
// conversation-id order) and give exactly what Summarize and
// ClusterBootstrap give for the verdicts they came from. PositionTally and
// ConsistencyTally do the same for the position diagnostics.
//
// Wilson interval. Given for reference, on the win-rate scale: the score
// interval for a proportion with x = wins + ties/2 "successes" out of n
// trials (x may be a half-integer). It ignores clustering, so it is usually
// narrower than the bootstrap interval when conversations contribute many
// turns.
//
// Exact tests. SignTest is the exact two-sided binomial test of k successes
// out of n against p = 1/2: twice the smaller tail, capped at 1 (for p = 1/2
// this equals the "sum of outcomes no more likely than the one seen" rule of
// scipy.stats.binomtest). Up to n = 1000 the tail is summed in exact integer
// arithmetic and rounded once; above that it is summed in log space from
// math.Lgamma. Summaries apply it to the decisive comparisons (wins against
// losses, ties dropped). McNemarExact is the same test on the discordant
// pairs b and c of a paired binary comparison.
//
// Small n is stated, never hidden: every Summary carries SmallN and
// FewConversations flags and a Warning text that the report prints as is.
//
// Position bias. Judges tend to favour one position (often the second).
// MeasurePositionBias reports the share of decisive verdicts won by the
// response shown first, with a Wilson interval and a sign test against 1/2.
// When every pair is judged in both orders, Combine (CombineOrders for a
// slice) turns the two verdicts into one, a win only when it wins in both
// orders and otherwise a tie; PositionConsistency reports how often the two
// orders agree, and SplitOrders yields the single-order verdicts for
// MeasurePositionBias.
//
// Length-controlled win rate, exact McNemar between arms, L1 policy fit.
// Judges tend to prefer longer answers, so a strategy that writes more can
// win for that alone. LCData (fed one conversation at a time) and
// LengthControlledWinRate estimate, as AlpacaEval 2's length-controlled
// win rate does with its minimal model, the rate A would have if both
// answers had the same length: a logistic model
// P(A wins) = σ(α + β·tanh(Δ/s)), Δ = LenA − LenB and s the sample
// standard deviation of Δ over the verdicts (n−1 denominator), read at
// Δ = 0, i.e. σ(α). Ties enter as half a win (a fractional outcome of 1/2,
// as AlpacaEval scores a tie and as the win rate counts one), so with no
// length differences the estimate is the raw win rate. The fit is maximum
// likelihood with a weak ridge on β only (β²/50, which keeps β finite when
// length alone separates wins from losses), on tanh(Δ/s) rounded to a
// grid of step 2/512 so that each bootstrap round costs one count per
// verdict and a fit on at most 513 values. The interval is the
// conversation bootstrap of ClusterBootstrap (same seed, same draws,
// conversations in the order added, s kept at its full-data value), each
// round refitted from the full-data estimate. Fits where length nearly
// decides the verdicts, or where few comparisons are near equal length,
// carry a warning: there the rate at equal length is an extrapolation.
// ArmTable and CompareArms test two arms judged against the same reference
// on the same turns (for example gated-reset and fc, both against ao):
// exact McNemar on the discordant turns, ties as losses by default (the
// AC3 paper's convention), as half wins (outcomes ordered) or dropped.
// FitL1Logistic fits the adaptive policy as Huang et al. do: L1-penalised
// logistic regression on standardised features, balanced class weights,
// ties as losses by default, the strength chosen by k-fold
// cross-validation (F1 by default) over a log-spaced grid with folds drawn
// from a seeded PCG (optionally by conversation), returning the held-out
// scores and each row's held-out probability; TauForShare and BestTau pick
// the policy's threshold τ from held-out scores.
package stats
