package filter_test

import (
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/filter"
)

func Example() {
	f, err := filter.New(filter.Options{
		Languages:    []string{"en"},
		MinUserTurns: 2, MaxUserTurns: 10,
		Domains:   []string{"coding", "math"},
		DropToxic: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := &conv.Conversation{Language: "English", Messages: []conv.Message{
		{Role: conv.User, Content: "Why does my Python loop never end?"},
		{Role: conv.Assistant, Content: "The condition never becomes false."},
		{Role: conv.User, Content: "Thanks, and how do I break out early?"},
	}}
	keep, reason := f.Check(c)
	fmt.Printf("%v %q %v\n", keep, reason, filter.Classify(c))

	c.Language = "French"
	keep, reason = f.Check(c)
	fmt.Printf("%v %q\n", keep, reason)
	// Output:
	// true "" [coding]
	// false "language"
}

func ExampleOptions_Validate() {
	err := filter.Options{MinUserTurns: 5, MaxUserTurns: 3, Domains: []string{"cooking"}}.Validate()
	fmt.Println(err)
	// Output:
	// filter option MinUserTurns: 5 is greater than MaxUserTurns (3)
	// filter option Domains: unknown domain "cooking"; valid domains: creative_writing, science_medical, business_finance, education, math, coding
}
