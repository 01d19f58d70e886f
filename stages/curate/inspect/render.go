package inspect

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	textcells "github.com/ac3/ac3/pipeline/cells"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Layout of Render. A column narrower than minColumn is unreadable, so
// below it the contexts are stacked instead.
const (
	defaultWidth = 100
	minColumn    = 30
	gutter       = " │ "
)

// Render writes a readable view of several strategies' contexts for one
// unit: one column per context when width allows, otherwise one after
// another. Each message shows where it came from (an original message #i, an
// inserted text, filler, or parts joined into one message) and long messages
// are cut to their head and tail with the full length in characters. A last
// line compares token totals. width <= 0 means 100 columns. Widths are
// counted in terminal cells (a CJK character or an emoji takes two), so
// columns stay aligned in any script.
func Render(w io.Writer, c *conv.Conversation, ctxs []curated.Context, width int) error {
	if width <= 0 {
		width = defaultWidth
	}
	bw := bufio.NewWriter(w)
	for _, l := range wrap(fmt.Sprintf("conversation %s · %d messages · %d user turns", c.ID, len(c.Messages), c.UserTurns()), width) {
		bw.WriteString(l + "\n")
	}
	n := len(ctxs)
	colWidth := 0
	if n > 0 {
		colWidth = (width - (n-1)*cells(gutter)) / n
	}
	if n > 1 && colWidth >= minColumn {
		cols := make([][]string, n)
		for k, x := range ctxs {
			cols[k] = renderColumn(c, x, colWidth, colWidth*4)
		}
		bw.WriteString(strings.Repeat("═", width) + "\n")
		sideBySide(bw, cols, colWidth)
	} else {
		for _, x := range ctxs {
			bw.WriteString(strings.Repeat("═", width) + "\n")
			for _, l := range renderColumn(c, x, width, width*5) {
				bw.WriteString(strings.TrimRight(l, " ") + "\n")
			}
		}
	}
	bw.WriteString(strings.Repeat("═", width) + "\n")
	for _, l := range wrap(tokenSummary(ctxs), width) {
		bw.WriteString(l + "\n")
	}
	return bw.Flush()
}

// sideBySide writes cols next to each other, each padded to colWidth cells
// and parted by the gutter.
func sideBySide(bw *bufio.Writer, cols [][]string, colWidth int) {
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	for r := range rows {
		var line strings.Builder
		for k := range cols {
			cell := ""
			if r < len(cols[k]) {
				cell = cols[k][r]
			}
			if k > 0 {
				line.WriteString(gutter)
			}
			if k < len(cols)-1 {
				cell += strings.Repeat(" ", max(0, colWidth-cells(cell)))
			}
			line.WriteString(cell)
		}
		bw.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// renderColumn lays out one context as lines at most width cells wide, with
// each message's text cut to about budget cells.
func renderColumn(c *conv.Conversation, x curated.Context, width, budget int) []string {
	lines := wrap(fmt.Sprintf("%s · turn %d · %d msgs · %d tok", x.Strategy, x.Turn, x.Messages, x.Tokens), width)
	lines = append(lines, strings.Repeat("─", width))
	if !x.Info.IsZero() {
		lines = append(lines, renderInfo(x.Info, width, budget)...)
		lines = append(lines, strings.Repeat("─", width))
	}
	curated.ForEachMessage(c, x.Parts, func(role conv.Role, group []curated.Part) {
		lines = append(lines, wrap("["+originLabel(role, group)+"]", width)...)
		for _, l := range wrap(shorten(flatten(curated.GroupContent(c, group)), budget), width-2) {
			lines = append(lines, "  "+l)
		}
	})
	return lines
}

// originLabel says where a message came from: "#3 user", "assistant
// (inserted)", "assistant (filler for #3)", "user: #0+#2+#4".
func originLabel(role conv.Role, group []curated.Part) string {
	one := func(p curated.Part) string {
		switch {
		case p.Ref == curated.RefSystem:
			return "system"
		case p.Ref == curated.RefText:
			return "inserted"
		case p.Fill > 0:
			return fmt.Sprintf("filler for #%d", p.Ref)
		default:
			return fmt.Sprintf("#%d", p.Ref)
		}
	}
	if len(group) > 1 {
		names := make([]string, len(group))
		for k, p := range group {
			names[k] = one(p)
		}
		return fmt.Sprintf("%s: %s", role, strings.Join(names, "+"))
	}
	switch p := group[0]; {
	case p.Ref == curated.RefSystem:
		return "system"
	case p.Ref >= 0 && p.Fill == 0:
		return fmt.Sprintf("#%d %s", p.Ref, role)
	default:
		return fmt.Sprintf("%s (%s)", role, one(p))
	}
}

// flatten puts a message on one logical line: newlines become "↵" and runs
// of other white space a single space, so the layout stays predictable.
func flatten(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ↵ ")), " ")
}

// shorten keeps the head and tail of s when it is wider than budget
// cells, marking the cut and the original length in characters.
func shorten(s string, budget int) string {
	if cells(s) <= budget {
		return s
	}
	r := []rune(s)
	head := prefixRunes(r, budget*2/3)
	tail := len(r) - suffixRunes(r, budget-budget*2/3)
	return fmt.Sprintf("%s … %s [%d chars]", strings.TrimSpace(string(r[:head])), strings.TrimSpace(string(r[tail:])), len(r))
}

// prefixRunes is how many runes of r fit in w cells from the start;
// suffixRunes the same from the end.
func prefixRunes(r []rune, w int) int {
	n, used := 0, 0
	for n < len(r) && used+cellsOf(r[n]) <= w {
		used += cellsOf(r[n])
		n++
	}
	return n
}

func suffixRunes(r []rune, w int) int {
	n, used := 0, 0
	for n < len(r) && used+cellsOf(r[len(r)-1-n]) <= w {
		used += cellsOf(r[len(r)-1-n])
		n++
	}
	return n
}

// wrap breaks s into lines of at most width cells, at spaces when it can
// (a space in the second half of the line), else between characters.
func wrap(s string, width int) []string {
	if width < 2 {
		width = 2 // a wide character must fit on a line
	}
	var lines []string
	r := []rune(s)
	// A rest of more than twice width runes is wrapped without measuring it
	// whole (once per line, that was quadratic): a rune that shows takes a
	// cell, so it could fit only if mostly combining marks, and then the
	// line comes out shorter, never longer.
	for len(r) > 2*width || cells(string(r)) > width {
		fit := prefixRunes(r, width)
		cut := fit
		for i := fit; i > fit/2; i-- {
			if i < len(r) && r[i] == ' ' {
				cut = i
				break
			}
		}
		lines = append(lines, strings.TrimRight(string(r[:cut]), " "))
		r = r[cut:]
		for len(r) > 0 && r[0] == ' ' {
			r = r[1:]
		}
	}
	if len(r) > 0 || len(lines) == 0 {
		lines = append(lines, string(r))
	}
	return lines
}

// cells is the width of s in terminal cells. Runes of ambiguous width
// (box drawing, "…", "·") count one whatever the locale, as the layout
// draws with them and the output must not depend on the machine.
func cells(s string) int { return textcells.String(s) }

func cellsOf(r rune) int { return textcells.Rune(r) }

// tokenSummary compares token totals with the first context's.
func tokenSummary(ctxs []curated.Context) string {
	if len(ctxs) == 0 {
		return "no contexts"
	}
	var parts []string
	base := ctxs[0].Tokens
	for k, x := range ctxs {
		s := fmt.Sprintf("%s %d", x.Strategy, x.Tokens)
		if k > 0 && base > 0 {
			s += fmt.Sprintf(" (%.0f%%)", 100*float64(x.Tokens)/float64(base))
		}
		parts = append(parts, s)
	}
	return "tokens: " + strings.Join(parts, " · ")
}

// renderInfo lays out what a model-backed strategy decided and the analysis
// it decided on, above the context it built.
func renderInfo(i curated.Info, width, budget int) []string {
	var head []string
	if i.Operator != "" {
		head = append(head, i.Operator)
	}
	if i.Action != "" {
		head = append(head, "action "+i.Action)
	}
	if i.GateOpen {
		head = append(head, "gate open")
	} else {
		head = append(head, "gate closed")
	}
	if i.Resets > 0 {
		head = append(head, fmt.Sprintf("resets so far %d", i.Resets))
	}
	if i.TurnType != "" {
		head = append(head, "turn type "+i.TurnType)
	}
	if i.Scored {
		head = append(head, fmt.Sprintf("score %.3f", i.Score))
	}
	if i.Constraints > 0 {
		head = append(head, fmt.Sprintf("%d session constraints appended", i.Constraints))
	}
	if i.Memory != "" {
		head = append(head, "memory "+i.Memory)
	}
	lines := wrap(strings.Join(head, " · "), width)
	if u := i.Usage(); u.Calls > 0 {
		lines = append(lines, wrap(fmt.Sprintf("calls %d (%d cached) · %d+%d tok · $%.5f", u.Calls, u.Cached, u.PromptTokens, u.CompletionTokens, u.CostUSD), width)...)
	}
	if i.Analyzed {
		if i.Analysis.Ablation != "" {
			lines = append(lines, wrap(i.Analysis.Ablation+" (not the AC3 analyzer)", width)...)
		}
		for _, f := range []struct{ name, text string }{{"spec", i.Analysis.Spec}, {"aligned", i.Analysis.Aligned}, {"issues", i.Analysis.Issues}} {
			lines = append(lines, "["+f.name+"]")
			for _, l := range wrap(shorten(flatten(f.text), budget), width-2) {
				lines = append(lines, "  "+l)
			}
		}
	}
	return lines
}
