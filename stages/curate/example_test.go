package curate_test

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate"
)

func Example() {
	c := &conv.Conversation{ID: "ex-1", Messages: []conv.Message{
		{Role: conv.User, Content: "Suggest a name for a bakery."},
		{Role: conv.Assistant, Content: "How about \"Rise & Shine\"?"},
		{Role: conv.User, Content: "Something shorter, please."},
	}}
	counter, err := tokens.New("o200k_base")
	if err != nil {
		panic(err)
	}
	strategies, err := curate.Resolve("fc,ao,de", curate.Options{})
	if err != nil {
		panic(err)
	}
	tc := curate.NewWorkspace(c, counter) // one per conversation, shared by the strategies
	for _, s := range strategies {
		ctxs, err := s.Contexts(context.Background(), c, curate.DefaultFrom, tc)
		if err != nil {
			panic(err)
		}
		for _, x := range ctxs {
			fmt.Printf("%s turn %d: %d messages, %d tokens\n", x.Strategy, x.Turn, x.Messages, x.Tokens)
			for _, m := range x.Materialize(c) {
				fmt.Printf("  %s: %s\n", m.Role, m.Content)
			}
		}
	}
	// Output:
	// fc turn 2: 3 messages, 34 tokens
	//   user: Suggest a name for a bakery.
	//   assistant: How about "Rise & Shine"?
	//   user: Something shorter, please.
	// ao turn 2: 4 messages, 87 tokens
	//   system: About the history below: earlier assistant replies and tool results were left out on purpose. Each one appears only as "[earlier reply omitted]", and its content is not available to you. Work from what the user wrote and answer the user's latest message.
	//   user: Suggest a name for a bakery.
	//   assistant: [earlier reply omitted]
	//   user: Something shorter, please.
	// de turn 2: 1 messages, 12 tokens
	//   user: Something shorter, please.
}
