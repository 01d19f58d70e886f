// Package report reads a finished (or partial) run from its ledger and
// writes what a person wants to know about it: who wins each judged pair,
// by how much and with what certainty, per dimension, turn type and round;
// whether the judge favours a position; the win rate at equal answer
// lengths; how two arms judged against one reference compare on the same
// turns; how many comparisons were ties without a call and how many of
// those came from identical contexts; what each strategy costs in context
// tokens against fc; how often AC3's gate opens (overall, per turn type and
// per round), how many resets it made and what its analysis cost per
// analyzed turn; what the model calls cost per role; and, when those stages
// ran, the turn-type distribution (with the heuristic labeller's measured
// quality when the types are its own), pollution shares of the dataset's
// replies and of the generated ones per strategy, and session constraints.
//
// The numbers about curation and annotation come from the stages' own
// summaries (curate's GateTally, ResetTally, TokenTally and CostTally; the
// Summarizers of classify, constraints and pollution), so the report and
// the stages cannot disagree on what a stored record means.
//
// Memory. Build is a fold over pages of conversations: for each page it
// reads every stage's units of those conversations (annotations first, so
// the page's turn types are known, then curated contexts and generated
// answers, so each verdict joins its turn type, its answers' lengths and
// whether both strategies built the same context), feeds them to
// accumulators and forgets them. The one thing that grows with the run is
// what the conversation bootstraps need: per judge pair and dimension, a
// varint record of 3–4 bytes per conversation with a verdict in each
// summary (overall, each turn type, each round: the round records add up to
// one per judged turn) and, for the length-controlled win rate, 2–4 bytes
// per verdict (its outcome and the length difference); and once per report
// the ids of those conversations (the id's bytes plus 12), because the
// resampling visits conversations in id order. The McNemar tests between
// arms join outcomes within a page and keep a 3×3 table each; the
// pollution rates of generated replies keep counts only. On the synthetic
// run of BenchmarkReportMemory the live heap grows by about 100 bytes per
// added conversation.
//
// Progress. The report lists, per planned stage variant, the units done,
// the failed ones grouped by reason with one example, and the conversations
// never attempted, and adds a note for every variant that is not complete,
// so a rate over the turns that were curated is never read as the rate of
// the run.
//
// Build collects everything into a Report; WriteJSON, WriteMarkdown and
// WriteHTML render it. report.json carries every number with its n, its
// interval and method, the bootstrap seed, the prompt versions, models and
// endpoint names (never keys or URLs). report.md has the same tables for a
// paper or a pull request. report.html is one self-contained file with the
// charts drawn as inline SVG: no scripts, fonts or images are fetched, so it
// opens offline and can be mailed around.
//
// Reading. Both files open with a table of contents (report.html names its
// anchors the way GitHub names report.md's, so #win-rates works in both). Per pair and dimension
// they show three verdicts with the judge's reasoning, chosen by a hash of
// the report seed and the verdicts' ids (one per outcome where there is
// one), so the choice is the same on every run of the report and needs no
// more memory than the three. In report.html every colour means one thing,
// named in a legend; chart margins are sized to their longest label, which
// the browser test checks in Chromium at 1280 px; long tables (McNemar
// between arms, rates by round) are folded under their summary; and every
// table row links into 'ac3 view' (view.go has the URLs, on the base of
// Options.ViewBase), which the page says has to be running for them.
//
// Small samples are stated next to the number they affect, never hidden:
// every summary carries the warnings of pipeline/stats.
//
// The package reads stored units through Source, which *ledger.Ledger
// satisfies; it never calls a model and writes nothing to the run.
package report
