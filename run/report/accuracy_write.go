package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteJSON writes accuracy.json's content.
func (a *Accuracy) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(a)
}

// pctSD formats a standard deviation of rates in percentage points.
func pctSD(n Num) string {
	if !n.Known() {
		return "—"
	}
	return fix(n*100, 1) + "pp"
}

func paired(p *Paired) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("+%d/−%d p=%s", p.Better, p.Worse, pval(p.P))
}

// gain formats a gain in percentage points with its interval.
func gain(g *Gain) string {
	if g == nil || !g.Mean.Known() {
		return "—"
	}
	sign := ""
	if g.Mean > 0 {
		sign = "+"
	}
	return fmt.Sprintf("%s%spp %s", sign, fix(g.Mean*100, 1), ivlPP(g.Interval))
}

// ivlPP formats an interval of differences in percentage points.
func ivlPP(iv Interval) string {
	if !iv.Lo.Known() || !iv.Hi.Known() {
		return ""
	}
	return fmt.Sprintf("[%s, %s]", fix(iv.Lo*100, 1), fix(iv.Hi*100, 1))
}

// WriteMarkdown writes the accuracy section as Markdown.
func (a *Accuracy) WriteMarkdown(w io.Writer) error {
	b := &mdWriter{w: w}
	b.f("# LiC replay accuracy: %s\n\n", a.Run)
	if a.Grader != "" {
		b.f("Grader: `%s`.\n\n", a.Grader)
	}
	for _, n := range a.Notes {
		b.f("> %s\n\n", n)
	}
	b.f("## Pool\n\n| task | instances | baseline passed | selected | flagged (false negative) | replayed | trajectories |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range a.Pool {
		b.f("| %s | %d | %d/%d | %d | %d | %d | %d |\n", p.Task, p.Instances, p.BaselinePassed, p.BaselineGraded, p.Selected, p.Flagged, p.Pool, p.Trajectories)
	}
	b.f("\n## Accuracy by task and strategy\n\n")
	b.f("| task | strategy | instances | reruns | accuracy | Wilson %s | mean ± sd | gain vs %s [bootstrap by problem] | vs %s (McNemar) | vs %s (McNemar) | gap closure ‡ | answers ‡ | pooled accuracy ‡ | Wilson ‡ | vs %s ‡ | vs %s ‡ |\n", pct(a.Level), a.FC, a.FC, a.AO, a.FC, a.AO)
	b.f("|---|---|---:|---:|---:|---|---|---|---|---|---:|---:|---:|---|---|---|\n")
	for _, c := range a.Cells {
		b.f("| %s | %s | %d | %d | %s | %s | %s ± %s | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n", c.Task, esc(c.Strategy), c.Instances, c.Reruns,
			pct(c.InstanceAccuracy), ivl(c.InstanceInterval), pct(c.Mean), pctSD(c.SD), gain(c.GainVsFC), paired(c.InstVsFC), paired(c.InstVsAO),
			pct(c.GapClosure), c.N, pct(c.Accuracy), ivl(c.Interval), paired(c.VsFC), paired(c.VsAO))
	}
	b.f("\n")
	if len(a.Leak) > 0 {
		b.f("## Analyzer answer leak (math)\n\nShare of the analyzer's outputs at the replayed turns that contain the reference answer, and the gain over fc on the items whose analysis at the replayed turn does not (§5.1's leak-free gain: mean per item, McNemar over paired answers, reruns counted as independent).\n\n| strategy | analyses | with the answer | rate | leak-free items | gain vs fc there | McNemar |\n|---|---:|---:|---:|---:|---:|---|\n")
		for _, l := range a.Leak {
			b.f("| %s | %d | %d | %s | %d | %s | %s |\n", esc(l.Strategy), l.Analyses, l.Leaks, pct(l.Rate), l.LeakFree.Items, gain(&Gain{Mean: l.LeakFree.Gain}), paired(l.LeakFree.VsFC))
		}
		b.f("\n")
	}
	return b.err
}

// WriteAccuracy writes accuracy.md and accuracy.json into dir and returns
// their paths.
func WriteAccuracy(dir string, a *Accuracy) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing the accuracy section: %w", err)
	}
	var paths []string
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"accuracy.md", a.WriteMarkdown}, {"accuracy.json", a.WriteJSON}} {
		path := filepath.Join(dir, f.name)
		if err := writeFile(path, f.write); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
