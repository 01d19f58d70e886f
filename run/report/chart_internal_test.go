package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	viewBoxRE = regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`)
	textRE    = regexp.MustCompile(`<text x="([\d.]+)" y="[\d.]+"( text-anchor="(end|middle)")?[^>]*>([^<]*)</text>`)
)

// Every chart label fits its chart by the width estimate the margins are
// sized with (the browser test checks the estimate itself in Chromium):
// long pair names, wide scripts and long value texts included.
func TestChartLabelsFitTheirCharts(t *testing.T) {
	long := "gated-reset+constraints:adaptive/final_answer_only · on_topic"
	charts := map[string]string{
		"forest": forest([]forestRow{
			{label: long, rate: .55, lo: .5, hi: .6, wlo: .45, whi: .65, n: 1200},
			{label: "推理痕迹延续 reasoning-trace carryover", rate: math.NaN(), lo: math.NaN(), hi: math.NaN(), wlo: math.NaN(), whi: math.NaN()},
			{label: "x", rate: 1, lo: 1, hi: 1, wlo: .9, whi: 1, n: 3, small: true},
		}),
		"bars": barChart([]bar{
			{label: "factual_hallucination_carryover · conversations", v: .3, lo: .2, hi: .4, text: "30.0% (3/10) · labeller coverage 84.8%, accuracy 74.0%"},
			{label: "応答の整形", v: 1, lo: math.NaN(), hi: math.NaN(), text: "$1234.5678 · 1000000 calls"},
		}, 1),
		"lines": lineChart([]series{
			{name: "gated-reset+constraints", pts: []point{{2, 12345.6}, {3, 99999}}},
			{name: "ao", pts: []point{{2, 10}, {3, math.NaN()}}},
		}, "round (user turn)", "mean context tokens"),
	}
	for name, svg := range charts {
		vb := viewBoxRE.FindStringSubmatch(svg)
		if vb == nil {
			t.Fatalf("%s: no viewBox in %s", name, svg)
		}
		w, _ := strconv.ParseFloat(vb[1], 64)
		texts := textRE.FindAllStringSubmatch(svg, -1)
		if len(texts) == 0 {
			t.Fatalf("%s: no text", name)
		}
		for _, m := range texts {
			if strings.Contains(m[0], "transform=") {
				continue // the axis title, turned upright beside the axis
			}
			x, _ := strconv.ParseFloat(m[1], 64)
			label := strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'").Replace(m[4])
			tw := textWidth(label)
			lo, hi := x, x+tw
			switch m[3] {
			case "end":
				lo, hi = x-tw, x
			case "middle":
				lo, hi = x-tw/2, x+tw/2
			}
			if lo < 0 || hi > w {
				t.Errorf("%s: %q spans %.0f..%.0f in a chart 0..%.0f wide", name, label, lo, hi, w)
			}
		}
	}
}
