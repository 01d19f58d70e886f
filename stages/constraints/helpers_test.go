package constraints_test

import "github.com/ac3/ac3/pipeline/conv"

// sample has four user turns; every assistant turn carries a marker so a
// test can tell which assistant text reached a prompt.
func sample() *conv.Conversation {
	return &conv.Conversation{ID: "c1", System: "SYSTEM-MARKER", Messages: []conv.Message{
		{Role: conv.User, Content: "For the rest of this session, reply in bullet points only. What is a monad?"},
		{Role: conv.Assistant, Content: "- A monad is a pattern. ASSISTANT-MARKER-1"},
		{Role: conv.User, Content: "Give an example in Haskell."},
		{Role: conv.Assistant, Content: "- Maybe is one. ASSISTANT-MARKER-2"},
		{Role: conv.Tool, Content: "TOOL-MARKER"},
		{Role: conv.User, Content: "I like how you ended with a summary there, do that from now on."},
		{Role: conv.Assistant, Content: "- Noted. Summary: ok. ASSISTANT-MARKER-3"},
		{Role: conv.User, Content: "Now explain functors."},
		{Role: conv.Assistant, Content: "- A functor maps. ASSISTANT-MARKER-4"},
	}}
}
