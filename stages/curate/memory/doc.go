// Package memory is the AC3 memory: the cheatsheet step 2 of every analysis
// is given, learned from the run's own conversations and kept in the run's
// settings.
//
// Offline (offline.go), a cheatsheet is learned once from the first
// conversations of the run and frozen; the conversations it was learned on
// are the learning split (split.go), which curation and the report leave
// out. Online (online.go), the cheatsheet grows one conversation at a time
// in ingest order, each conversation's analyses seeing the cheatsheet the
// ones before it left. show.go writes both for 'ac3 memory show'.
//
// The AC3 operators that read a cheatsheet, and the curate stage that
// brings the online one up to each conversation, are in package curate;
// this package calls the analyzer and stores, and knows nothing of
// strategies.
package memory
