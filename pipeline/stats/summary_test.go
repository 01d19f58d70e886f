package stats

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	// 6 wins, 4 ties over 10 turns of 5 conversations: win rate 0.8 and
	// Wilson on the win-rate scale equals 8/10.
	var vs []Verdict
	for i := range 10 {
		o := AWins
		if i >= 6 {
			o = Tie
		}
		vs = append(vs, Verdict{Conversation: fmt.Sprint("c", i%5), Turn: 2 + i/5, Outcome: o})
	}
	s := Summarize(vs, Options{Seed: 5})
	if s.Counts != (Counts{Wins: 6, Ties: 4, N: 10}) || s.Conversations != 5 {
		t.Fatalf("counts %+v, conversations %d", s.Counts, s.Conversations)
	}
	if s.WinRate != 0.8 {
		t.Errorf("win rate %v, want 0.8", s.WinRate)
	}
	if s.Wilson != Wilson(8, 10, 0.95) {
		t.Errorf("Wilson %+v, want that of 8/10", s.Wilson)
	}
	// Ties dropped: 6 wins, 0 losses -> 2/64.
	if s.SignP != 0.03125 {
		t.Errorf("sign p %v, want 0.03125", s.SignP)
	}
	if s.Level != 0.95 || s.Resamples != 2000 || s.Seed != 5 {
		t.Errorf("defaults not recorded: %+v", s)
	}
	if s.Bootstrap != ClusterBootstrap(vs, Options{Seed: 5}) {
		t.Errorf("bootstrap %+v differs from ClusterBootstrap", s.Bootstrap)
	}
	if !s.SmallN || !s.FewConversations {
		t.Errorf("10 comparisons from 5 conversations must be flagged: %+v", s)
	}
}

func TestSummarizeWarnings(t *testing.T) {
	many := mixed(60) // 238 verdicts, 60 conversations
	tests := []struct {
		name          string
		vs            []Verdict
		opt           Options
		smallN, fewC  bool
		warn, notWarn []string
	}{
		{"large", many, Options{}, false, false, nil, []string{"small n", "conversations"}},
		{"empty", nil, Options{}, true, true, []string{"no comparisons"}, []string{"conversations"}},
		{"small n", verdicts("a", AWins, 3), Options{}, true, true,
			[]string{"small n: 3 comparisons (fewer than 30)", "only 1 conversations"}, nil},
		{"custom thresholds", verdicts("a", AWins, 3), Options{MinN: 3, MinConversations: 1}, false, false, nil, []string{"small n"}},
		{"invalid verdicts stated", join(many, verdicts("x", 0, 2)), Options{}, false, false,
			[]string{"2 verdicts without a valid outcome"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.vs, tt.opt)
			if s.SmallN != tt.smallN || s.FewConversations != tt.fewC {
				t.Errorf("SmallN %v FewConversations %v, want %v %v", s.SmallN, s.FewConversations, tt.smallN, tt.fewC)
			}
			for _, w := range tt.warn {
				if !strings.Contains(s.Warning, w) {
					t.Errorf("warning %q lacks %q", s.Warning, w)
				}
			}
			for _, w := range tt.notWarn {
				if strings.Contains(s.Warning, w) {
					t.Errorf("warning %q should not mention %q", s.Warning, w)
				}
			}
		})
	}
	if s := Summarize(nil, Options{}); !math.IsNaN(s.WinRate) || s.SignP != 1 {
		t.Errorf("empty summary: win rate %v, sign p %v", s.WinRate, s.SignP)
	}
}

func TestBreakdowns(t *testing.T) {
	vs := []Verdict{
		{Conversation: "a", Turn: 2, TurnType: "new_ask", Outcome: AWins},
		{Conversation: "a", Turn: 3, TurnType: "follow_up", Outcome: Tie},
		{Conversation: "b", Turn: 2, TurnType: "new_ask", Outcome: BWins},
		{Conversation: "b", Turn: 3, TurnType: "", Outcome: AWins},
		{Conversation: "c", Turn: 4, TurnType: "follow_up", Outcome: AWins},
	}
	byType := ByTurnType(vs, Options{Seed: 1})
	wantType := []struct {
		key  string
		n    int
		rate float64
	}{{"", 1, 1}, {"follow_up", 2, 0.75}, {"new_ask", 2, 0.5}}
	if len(byType) != len(wantType) {
		t.Fatalf("got %d turn-type groups, want %d", len(byType), len(wantType))
	}
	for i, w := range wantType {
		g := byType[i]
		if g.TurnType != w.key || g.N != w.n || g.WinRate != w.rate || !g.SmallN || g.Warning == "" {
			t.Errorf("group %d: %q n=%d rate=%v smallN=%v, want %q n=%d rate=%v, flagged",
				i, g.TurnType, g.N, g.WinRate, g.SmallN, w.key, w.n, w.rate)
		}
		if !g.Bootstrap.Contains(g.WinRate) {
			t.Errorf("group %q: interval %+v misses %v", g.TurnType, g.Bootstrap, g.WinRate)
		}
	}

	byRound := ByRound(vs, Options{Seed: 1})
	wantRound := []struct {
		turn, n int
		rate    float64
	}{{2, 2, 0.5}, {3, 2, 0.75}, {4, 1, 1}}
	if len(byRound) != len(wantRound) {
		t.Fatalf("got %d rounds, want %d", len(byRound), len(wantRound))
	}
	for i, w := range wantRound {
		g := byRound[i]
		if g.Turn != w.turn || g.N != w.n || g.WinRate != w.rate || !g.SmallN {
			t.Errorf("round %d: turn %d n=%d rate=%v, want turn %d n=%d rate=%v", i, g.Turn, g.N, g.WinRate, w.turn, w.n, w.rate)
		}
	}
}
