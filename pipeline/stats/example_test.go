package stats_test

import (
	"fmt"

	"github.com/ac3/ac3/pipeline/stats"
)

func ExampleSummarize() {
	// Strategy A against B over 40 conversations, rounds 2 to 4 judged.
	var vs []stats.Verdict
	for c := range 40 {
		for turn := 2; turn <= 4; turn++ {
			// A wins every turn of 3 conversations in 5; in the others
			// it loses or ties, so outcomes cluster by conversation.
			o := stats.AWins
			if c%5 >= 3 {
				o = stats.BWins
				if turn == 3 {
					o = stats.Tie
				}
			}
			vs = append(vs, stats.Verdict{
				Conversation: fmt.Sprintf("conv-%02d", c),
				Turn:         turn,
				Outcome:      o,
			})
		}
	}
	s := stats.Summarize(vs, stats.Options{Seed: 1})
	fmt.Printf("n=%d (%d wins, %d losses, %d ties) in %d conversations\n",
		s.N, s.Wins, s.Losses, s.Ties, s.Conversations)
	fmt.Printf("win rate %.3f, %.0f%% bootstrap [%.3f, %.3f], Wilson [%.3f, %.3f]\n",
		s.WinRate, 100*s.Level, s.Bootstrap.Lo, s.Bootstrap.Hi, s.Wilson.Lo, s.Wilson.Hi)
	fmt.Printf("sign test p=%.2g; flagged: %v\n", s.SignP, s.SmallN || s.FewConversations)

	for _, g := range stats.ByRound(vs, stats.Options{Seed: 1}) {
		fmt.Printf("round %d: n=%d win rate %.3f\n", g.Turn, g.N, g.WinRate)
	}
	// The bootstrap interval is wider than Wilson's because it sees that
	// turns of one conversation move together.

	// Output:
	// n=120 (72 wins, 32 losses, 16 ties) in 40 conversations
	// win rate 0.667, 95% bootstrap [0.542, 0.792], Wilson [0.578, 0.745]
	// sign test p=0.00011; flagged: false
	// round 2: n=40 win rate 0.600
	// round 3: n=40 win rate 0.800
	// round 4: n=40 win rate 0.600
}

func ExampleMcNemarExact() {
	// 10 discordant pairs, 9 of them favouring the same side.
	fmt.Println(stats.McNemarExact(1, 9), stats.SignTest(9, 10))
	// Output: 0.021484375 0.021484375
}
