package report_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run/report"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/pollution"
)

// chromium returns the browser's path, or skips the test where none is
// installed (scripts/report-screenshot.sh can install one; a test never
// does, as tests stay off the network).
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser check")
	}
	for _, b := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (apt-get install -y chromium, or run scripts/report-screenshot.sh)")
	return ""
}

// layoutCheck is put at the end of a copy of the page. With every
// <details> open, it lists what a reader at 1280 px would not see whole:
// SVG text that leaves its chart (an inline SVG clips at its box), any
// element whose content is wider than its box, and a page wider than the
// window. It logs nothing, so the console stays the page's own.
const layoutCheck = `<script>
(function () {
  var out = [];
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) {
    out.push('the page is ' + root.scrollWidth + 'px wide in a ' + root.clientWidth + 'px window');
  }
  document.querySelectorAll('svg').forEach(function (svg) {
    var r = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect();
      if (b.left < r.left - 0.5 || b.right > r.right + 0.5 || b.top < r.top - 0.5 || b.bottom > r.bottom + 0.5) {
        out.push('chart text "' + t.textContent + '" is cut off: it spans x ' + Math.round(b.left) + '..' + Math.round(b.right) +
          ' in a chart spanning ' + Math.round(r.left) + '..' + Math.round(r.right));
      }
    });
  });
  document.body.querySelectorAll('*').forEach(function (el) {
    if (el.closest('svg') || el.clientWidth === 0) { return; }
    if (el.scrollWidth > el.clientWidth + 1) {
      out.push('<' + el.tagName.toLowerCase() + '> "' + el.textContent.slice(0, 60) + '" overflows: ' + el.scrollWidth + 'px in ' + el.clientWidth + 'px');
    }
  });
  var pre = document.createElement('pre');
  pre.id = 'ac3-layout-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
`

var (
	checkRE   = regexp.MustCompile(`(?s)<pre id="ac3-layout-check">(.*?)</pre>`)
	consoleRE = regexp.MustCompile(`(?m)^.*:CONSOLE[:(].*$`)
)

// checkInChromium loads page in headless Chromium at 1280 px with
// layoutCheck added and returns what the check found and every console
// message the page caused. The report has no scripts of its own, so any
// console message (an error, a resource that failed to load) is a fault.
func checkInChromium(t *testing.T, browser, page string) (problems, console []string) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	i := strings.LastIndex(src, "</body>")
	if i < 0 {
		t.Fatalf("%s has no </body>", page)
	}
	checked := filepath.Join(t.TempDir(), "checked.html")
	if err := os.WriteFile(checked, []byte(src[:i]+layoutCheck+src[i:]), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1280,2000",
		"--dump-dom", "file://"+checked)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	m := checkRE.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the layout check did not run; chromium said:\n%s", stderr.String())
	}
	raw := strings.NewReplacer("&quot;", `"`, "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(string(m[1]))
	if err := json.Unmarshal([]byte(raw), &problems); err != nil {
		t.Fatalf("reading the layout check %q: %v", raw, err)
	}
	return problems, consoleRE.FindAllString(stderr.String(), -1)
}

// TestReportRendersInChromium renders report.html in headless Chromium at
// 1280 px: no label cut off, nothing wider than its box, no console
// message, and a screenshot through scripts/report-screenshot.sh. With
// AC3_ARTIFACTS set, the screenshots and pages are kept there.
func TestReportRendersInChromium(t *testing.T) {
	browser := chromium(t)
	runs := []struct {
		name string
		src  *fakeRun
	}{
		{"fixed", fixedRun(t)},
		{"extras", extrasRun(t)},
		{"labels", longLabelRun(t)},
	}
	for _, tc := range runs {
		t.Run(tc.name, func(t *testing.T) {
			r, err := report.Build(context.Background(), tc.src, report.Options{Seed: 11, Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if _, err := report.Write(dir, r, []string{"html"}); err != nil {
				t.Fatal(err)
			}
			page := filepath.Join(dir, "report.html")
			problems, console := checkInChromium(t, browser, page)
			for _, p := range problems {
				t.Errorf("at 1280 px: %s", p)
			}
			for _, c := range console {
				t.Errorf("console: %s", c)
			}
			png := filepath.Join(dir, "report.png")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, "../../scripts/report-screenshot.sh", page, png).CombinedOutput()
			if err != nil {
				t.Fatalf("screenshot: %v\n%s", err, out)
			}
			st, err := os.Stat(png)
			if err != nil || st.Size() < 10_000 {
				t.Fatalf("screenshot missing or blank: %v %v\n%s", st, err, out)
			}
			if keep := os.Getenv("AC3_ARTIFACTS"); keep != "" {
				for _, f := range []string{page, png} {
					b, err := os.ReadFile(f)
					if err == nil {
						err = os.MkdirAll(keep, 0o755)
					}
					if err == nil {
						err = os.WriteFile(filepath.Join(keep, "report-"+tc.name+filepath.Ext(f)), b, 0o644)
					}
					if err != nil {
						t.Errorf("keeping %s: %v", f, err)
					}
				}
			}
		})
	}
}

// TestChromiumCheckCatchesFaults shows the check above is not blind: a
// label past its chart's edge, a cell too narrow for its word and a
// script error are all reported.
func TestChromiumCheckCatchesFaults(t *testing.T) {
	browser := chromium(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	bad := `<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<svg viewBox="0 0 200 30" width="200" height="30"><text x="190" y="15">labeller coverage 84.2%</text></svg>
<div style="width:60px;overflow:hidden">averyveryverylongunbreakableword</div>
<script>notAFunction();</script>
</body></html>`
	if err := os.WriteFile(page, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, console := checkInChromium(t, browser, page)
	all := strings.Join(problems, "\n")
	for _, want := range []string{`chart text "labeller coverage 84.2%" is cut off`, `<div> "averyveryverylongunbreakableword" overflows`} {
		if !strings.Contains(all, want) {
			t.Errorf("the check missed %q; it found:\n%s", want, all)
		}
	}
	if len(console) == 0 || !strings.Contains(strings.Join(console, "\n"), "notAFunction") {
		t.Errorf("the check missed the script error; console: %q", console)
	}
}

// longLabelRun has the labels most likely to be cut off: a long judge
// variant, a pollution category in a wide script and the heuristic
// labeller's turn types with its measured quality.
func longLabelRun(t *testing.T) *fakeRun {
	t.Helper()
	f := &fakeRun{plans: map[string][]ledger.Variant{}, units: map[string][]ledger.Unit{}}
	f.status = ledger.Status{Conversations: 6}
	const pair = "gated-reset+constraints:adaptive/final_answer_only"
	q := classify.HeuristicQuality()
	for seq := int64(1); seq <= 6; seq++ {
		for turn := 2; turn <= 3; turn++ {
			k := int(seq)*2 + turn
			f.add("classify", "heuristic", seq, turn, ledger.Done, map[string]any{"type": []string{"new_ask", "feedback", "no_feedback", "unknown"}[k%4], "refs": []string{}, "annotator": "heuristic"}, 0)
			f.add(pollution.StageName, "llm", seq, turn, ledger.Done, pollution.Label{Present: k%3 == 0, Category: "推理痕迹延续 reasoning-trace carryover", Sources: []string{"1a"}, Annotator: "llm:m"}, 0)
			oc := []string{"A", "B", "tie"}[k%3]
			f.add(judge.StageName, pair, seq, turn, ledger.Done, judge.Output{Pair: pair, A: "gated-reset+constraints", B: "adaptive", Context: "final_answer_only", Order: "random", Seed: 3, Prompt: "pairwise@v1",
				Comparisons: []judge.Comparison{{Sample: 0, Outcome: map[string]string{"quality": oc, "on_topic": "tie"},
					Calls: []judge.Call{{First: "A", Model: "m", Endpoint: "judge", Verdicts: map[string]judge.DimVerdict{
						"quality": {Justification: "回答保留了用户在第二轮设定的格式 — the answer kept the <format> the user set in round two, word for word, with a long explanation that has to wrap inside its box"}}}}}}}, 0)
		}
	}
	for i := range f.units["classify"] {
		f.units["classify"][i].Version = q.Annotator + ";from=2"
	}
	f.plans["classify"][0].Version = q.Annotator + ";from=2"
	f.status.Stages = stagesOf(f)
	return f
}
