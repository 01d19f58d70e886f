// Package inspect lays out a turn for a person to read, as 'ac3 inspect'
// shows it: several strategies' contexts side by side, each message
// labelled with where it came from, with what a model-backed strategy
// decided and a comparison of token totals; then the answers generated
// from those contexts and the judge's verdicts with its reasoning. Widths
// are terminal cells, so CJK text and emoji keep the columns aligned.
package inspect
