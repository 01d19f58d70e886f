// Package inspect lays out curated contexts for a person to read, as
// 'ac3 inspect' shows them: several strategies' contexts of one turn side
// by side, each message labelled with where it came from, with what a
// model-backed strategy decided and a comparison of token totals.
package inspect
