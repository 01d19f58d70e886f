package curate_test

import (
	"testing"

	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
)

func TestReportSummaries(t *testing.T) {
	row := func(conv string, turn int, strategy string, tokens int, info curate.Info, typ string) curate.ReportRow {
		return curate.ReportRow{ConvID: conv, Turn: turn, TurnType: typ, Context: curate.Context{Strategy: strategy, Turn: turn, Tokens: tokens, Info: info}}
	}
	use := analyze.Usage{Calls: 2, CostUSD: 0.01}
	rows := []curate.ReportRow{
		row("a", 2, "fc", 100, curate.Info{}, "new_ask"),
		row("a", 3, "fc", 200, curate.Info{}, "feedback"),
		row("b", 2, "fc", 100, curate.Info{}, "feedback"),
		row("a", 2, "gated-reset", 100, curate.Info{Operator: "gated-reset", Action: "floor"}, "new_ask"),
		row("a", 3, "gated-reset", 50, curate.Info{Operator: "gated-reset", Action: "reset", GateOpen: true, Resets: 1, Analyzed: true, AnalysisUsage: use}, "feedback"),
		row("b", 2, "gated-reset", 100, curate.Info{Operator: "gated-reset", Action: "pass", Analyzed: true, AnalysisUsage: use}, "feedback"),
	}
	g := curate.GateRates(rows)
	if len(g) != 1 || g[0].All.Turns != 3 || g[0].All.Open != 1 || g[0].Analyzed.Turns != 2 || g[0].ByType["feedback"].Open != 1 || g[0].ByType["new_ask"].Turns != 1 {
		t.Errorf("GateRates = %+v", g)
	}
	r := curate.ResetCounts(rows)
	if len(r) != 1 || r[0].Conversations != 2 || r[0].Resets != 1 || r[0].WithReset != 1 || r[0].Histogram[0] != 1 {
		t.Errorf("ResetCounts = %+v", r)
	}
	tk := curate.TokensVsFC(rows)
	if len(tk) != 2 || tk[1].Strategy != "gated-reset" || tk[1].Ratio != 250.0/400 || tk[0].Ratio != 1 {
		t.Errorf("TokensVsFC = %+v", tk)
	}
	c := curate.AnalysisCosts(rows)
	if len(c) != 1 || c[0].AnalyzedTurns != 2 || c[0].AnalysisCalls != 4 || c[0].PerAnalyzedTurnUSD != 0.01 || c[0].PerAnalyzedTurnCalls != 2 {
		t.Errorf("AnalysisCosts = %+v", c)
	}
	if keys := curate.TurnTypeKeys(g); len(keys) != 2 || keys[0] != "feedback" {
		t.Errorf("TurnTypeKeys = %v", keys)
	}
}
