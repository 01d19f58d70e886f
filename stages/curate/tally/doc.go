// Package tally sums stored curated contexts up for the report: how often
// each operator's gate opened (overall, on analyzed turns, by turn type),
// resets per conversation, context tokens against full context's, and what
// the model-backed strategies' calls took.
//
// Each tally folds rows one at a time as the report pages through a run, so
// its memory grows with the number of strategies, never with the run.
package tally
