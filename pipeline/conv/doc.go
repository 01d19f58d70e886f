// Package conv holds the domain model shared by every part of ac3: a
// conversation, its messages and roles, the numbering of user turns, the
// context that precedes an assistant turn, and UserView, the user-only view
// that makes the AC3 specification extractor unable to see assistant text.
//
// It imports only the standard library; everything else in ac3 imports it.
package conv
