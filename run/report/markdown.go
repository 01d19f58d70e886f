package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// Formats are the files Write can produce.
var Formats = []string{"html", "md", "json"}

// Write writes report.<format> into dir for each format (all when formats
// is empty) and returns the paths written. Each file is written to a
// temporary name and moved into place (io/atomicfile), so a reader never
// sees half a report.
func Write(dir string, r *Report, formats []string) ([]string, error) {
	if len(formats) == 0 {
		formats = Formats
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	var paths []string
	for _, f := range formats {
		var write func(io.Writer) error
		switch f {
		case "json":
			write = r.WriteJSON
		case "md", "markdown":
			f, write = "md", r.WriteMarkdown
		case "html":
			write = r.WriteHTML
		default:
			return paths, fmt.Errorf("writing report: unknown format %q (want html, md, json)", f)
		}
		path := filepath.Join(dir, "report."+f)
		if err := writeFile(path, write); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// WriteMarkdown writes the report's tables as Markdown.
func (r *Report) WriteMarkdown(w io.Writer) error {
	// Written whole first, so the contents can lead to every heading.
	var buf strings.Builder
	b := &mdWriter{w: &buf}
	b.f("# ac3 report: %s\n\n", r.Run)
	b.f("%d conversations in the run. Win rate = %s. Intervals: %s, %s%% level, %d resamples, seed %d; %s for reference. Test: %s.\n\n",
		r.Conversations, r.Settings.WinRate, r.Settings.Interval, fix(r.Settings.Level*100, 0), r.Settings.Resamples, r.Settings.Seed, r.Settings.Reference, r.Settings.Test)
	if len(r.Judge.Prompts) > 0 {
		b.f("Judge: prompt %s; models %s; endpoints %s; order %s; context %s",
			list(r.Judge.Prompts), list(r.Judge.Models), list(r.Judge.Endpoints), list(r.Judge.Orders), list(r.Judge.Contexts))
		if len(r.Judge.Seeds) > 0 {
			b.f("; random order drawn from seed %s", strings.Trim(fmt.Sprint(r.Judge.Seeds), "[]"))
		}
		b.f(".\n\n")
	}
	for _, n := range r.Notes {
		b.f("> %s\n\n", n)
	}
	if len(r.Pairs) > 0 {
		b.f("Links into the view need `ac3 view --db %s` running (they point at %s).\n\n", r.Run, r.view.link(""))
		b.f("## Win rates\n\n")
		b.f("Rates are for the first strategy of each pair (A). n counts compared turns (× samples); ties count half.\n\n")
		b.f("| pair | dimension | n | A wins | B wins | ties | win rate A | %s CI (bootstrap) | Wilson | sign p | convs | note |\n", pct(r.Settings.Level))
		b.f("|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|\n")
		for _, p := range r.Pairs {
			for _, d := range p.Dimensions {
				s := d.Overall
				b.f("| %s | %s | %d | %d | %d | %d | %s | %s | %s | %s | %d | %s |\n", p.Pair, d.Dimension, s.N, s.Wins, s.Losses, s.Ties, pct(s.WinRate), ivl(s.CI), ivl(s.Wilson), pval(s.SignTest.P), s.Conversations, esc(s.Warning))
			}
		}
		b.f("\n")
		r.mdNoCall(b)
		r.mdLengthControlled(b)
		r.mdArms(b)
		b.f("## Each pair in detail\n\n")
		for _, p := range r.Pairs {
			b.f("### %s (A = %s, B = %s; context %s, order %s)\n\n", p.Pair, p.A, p.B, p.Context, p.Order)
			b.f("%d turns judged, %d failed; %d comparisons, %d of them identical answers (ties without a call); both strategies built the same context for %d, %d of which were settled as ties without a call.\n\n", p.UnitsDone, p.UnitsFailed, p.Comparisons, p.Identical, p.SameContext, p.SameContextNoCall)
			for _, d := range p.Dimensions {
				b.f("**%s by turn type**\n\n", d.Dimension)
				groupTable(b, "turn type", d.ByTurnType)
				b.f("**%s by round**\n\n", d.Dimension)
				groupTable(b, "round", d.ByRound)
				pos := d.Position
				if fs := pos.FirstShown; fs != nil {
					b.f("Position (%s): the response shown first won %d of %d decisive verdicts (%s, Wilson %s, sign p %s; %d ties).", d.Dimension, fs.FirstWins, fs.Decisive, pct(fs.FirstShare), ivl(fs.Wilson), pval(fs.SignTest.P), fs.Ties)
					if fs.Warning != "" {
						b.f(" %s.", esc(fs.Warning))
					}
					b.f("\n")
				}
				if c := pos.Consistency; c != nil {
					b.f("Both orders agreed on %d of %d pairs (%s, Wilson %s); %d flips favoured the first position, %d the second.\n", c.Consistent, c.Pairs, pct(c.Rate), ivl(c.Wilson), c.FirstBoth, c.SecondBoth)
				}
				b.f("\n")
				r.mdExamples(b, p, d)
			}
		}
	}
	if len(r.Respond) > 0 {
		b.f("## Generated answers\n\n| variant | units done | failed | samples | mean completion tokens | mean context tokens | with reasoning | models | endpoints |\n|---|---:|---:|---:|---:|---:|---:|---|---|\n")
		for _, x := range r.Respond {
			b.f("| %s | %d | %d | %d | %s | %s | %d | %s | %s |\n", x.Variant, x.UnitsDone, x.UnitsFailed, x.Samples, fix(x.MeanCompletion, 1), fix(x.MeanContextToks, 1), x.WithReasoning, list(x.Models), list(x.Endpoints))
		}
		b.f("\n")
	}
	r.mdCuration(b)
	r.mdAnnotations(b)
	r.mdReplyPollution(b)
	r.mdCompInt(b)
	r.mdProgress(b)
	r.mdLearned(b)
	b.f("## Cost by role\n\n")
	if len(r.Cost.ByRole) == 0 {
		b.f("No model calls recorded.\n\n")
	} else {
		b.f("%s\n\n", spendNote)
		b.f("| role | calls | cache hits | failed | prompt tokens | endpoint-cached tokens | completion tokens | cost (USD) | models | stages |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
		for _, c := range r.Cost.ByRole {
			b.f("| %s | %d | %d | %d | %d | %s | %d | %s | %s | %s |\n", c.Role, c.Calls, c.CacheHits, c.Failed, c.PromptTokens, c.cachedCell(), c.CompletionTokens, fix(c.CostUSD, 4), list(c.Models), list(c.Stages))
		}
		b.f("| total | | | | | | | %s | | |\n\n", fix(r.Cost.TotalUSD, 4))
		b.f("%s\n\n", cachedNote)
	}
	if b.err != nil {
		return b.err
	}
	_, err := io.WriteString(w, mdWithTOC(buf.String()))
	return err
}

func groupTable(b *mdWriter, key string, gs []Group) {
	if len(gs) == 0 {
		b.f("No comparisons.\n\n")
		return
	}
	b.f("| %s | n | A | B | tie | win rate A | CI | sign p | note |\n|---|---:|---:|---:|---:|---:|---|---:|---|\n", key)
	for _, g := range gs {
		b.f("| %s | %d | %d | %d | %d | %s | %s | %s | %s |\n", g.Key, g.N, g.Wins, g.Losses, g.Ties, pct(g.WinRate), ivl(g.CI), pval(g.SignTest.P), esc(g.Warning))
	}
	b.f("\n")
}

func tokenRounds(ts []TokenRow) []int {
	seen := map[int]bool{}
	for _, t := range ts {
		for _, x := range t.ByRound {
			seen[x.Round] = true
		}
	}
	return sortedKeys(seen)
}

func ivl(iv Interval) string {
	if !iv.Lo.Known() || !iv.Hi.Known() {
		return "—"
	}
	return "[" + pct(iv.Lo) + ", " + pct(iv.Hi) + "]"
}

func list(ss []string) string {
	if len(ss) == 0 {
		return "—"
	}
	return strings.Join(ss, ", ")
}

// esc keeps a cell's text from breaking the table.
func esc(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

type mdWriter struct {
	w   io.Writer
	err error
}

func (m *mdWriter) f(format string, args ...any) {
	if m.err == nil {
		_, m.err = fmt.Fprintf(m.w, format, args...)
	}
}

// mdExamples writes a pair's example verdicts on one dimension, with a
// link to all of them in the view.
func (r *Report) mdExamples(b *mdWriter, p PairReport, d DimReport) {
	all := r.view.verdicts(p.Pair, d.Dimension)
	if len(d.Examples) == 0 {
		return
	}
	b.f("**%s: example verdicts** (chosen by a hash of the report seed and the verdicts' ids; [all %d in the view](%s))\n\n", d.Dimension, d.Overall.N, all)
	for _, x := range d.Examples {
		if len(x.Orders) == 0 {
			b.f("- **%s**, %s turn %d (%s)%s ([view](%s)): %s\n", winnerText(x), x.Conversation, x.Turn, x.TurnType, sampleText(x.Sample), r.view.turn(x.Conversation, x.Turn, "verdicts"), mdLine(x.Justification))
			continue
		}
		b.f("- **%s**, %s turn %d (%s)%s ([view](%s))\n", winnerText(x), x.Conversation, x.Turn, x.TurnType, sampleText(x.Sample), r.view.turn(x.Conversation, x.Turn, "verdicts"))
		for _, o := range x.Orders {
			b.f("  - %s: %s\n", orderText(o), mdLine(orNone(o.Justification)))
		}
	}
	b.f("\n")
}

// mdLine keeps a free text on one Markdown line and keeps a renderer
// from reading HTML in it.
func mdLine(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(strings.Join(strings.Fields(s), " "))
}
