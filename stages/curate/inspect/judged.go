package inspect

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Answer is one generated answer for the turn being inspected.
type Answer struct {
	Strategy string // the respond variant
	Sample   int
	Text     string
	Tokens   int    // completion tokens
	Model    string // as the server reported it
	// Failed, when set, says why no answer was recorded.
	Failed string
}

// Verdict is what the judge said about one comparison on one dimension of
// the turn: the outcome both orders combined, and every call asked.
type Verdict struct {
	Pair      string // the judge variant, e.g. "gated-reset:ao/user_only"
	A, B      string // its strategies
	Sample    int
	Dimension string
	Outcome   string // combined, in strategy names: A's, B's or "tie"
	Identical bool   // equal answers: a tie, no call
	Calls     []Call
	// Failed, when set, says why the judge unit has no verdict.
	Failed string
}

// Call is one answer of the judge on one dimension.
type Call struct {
	First         string // the strategy shown first
	Winner        string // the strategy this call preferred, or "tie"
	Justification string
}

// RenderAnswers writes the answers side by side, one column per answer,
// when width allows (as Render does with contexts), else one after
// another. Long answers are cut to their head and tail.
func RenderAnswers(w io.Writer, answers []Answer, width int) error {
	if len(answers) == 0 {
		return nil
	}
	if width <= 0 {
		width = defaultWidth
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("\n" + heading("generated answers", width) + "\n")
	n := len(answers)
	colWidth := (width - (n-1)*cells(gutter)) / n
	if n > 1 && colWidth >= minColumn {
		cols := make([][]string, n)
		for k, a := range answers {
			cols[k] = answerColumn(a, colWidth, colWidth*6)
		}
		sideBySide(bw, cols, colWidth)
	} else {
		for k, a := range answers {
			if k > 0 {
				bw.WriteString(strings.Repeat("─", width) + "\n")
			}
			for _, l := range answerColumn(a, width, width*8) {
				bw.WriteString(strings.TrimRight(l, " ") + "\n")
			}
		}
	}
	return bw.Flush()
}

func answerColumn(a Answer, width, budget int) []string {
	head := fmt.Sprintf("%s · sample %d", a.Strategy, a.Sample)
	if a.Failed == "" {
		head += fmt.Sprintf(" · %d tok", a.Tokens)
		if a.Model != "" {
			head += " · " + a.Model
		}
	}
	lines := wrap(head, width)
	lines = append(lines, strings.Repeat("─", width))
	text := a.Text
	if a.Failed != "" {
		text = "failed: " + a.Failed
	}
	return append(lines, wrap(shorten(flatten(text), budget), width)...)
}

// RenderVerdicts writes the judge's verdicts on the turn, grouped by
// pair: for each comparison and dimension the combined outcome, then
// every call in the order it was asked, with the judge's reasoning.
func RenderVerdicts(w io.Writer, vs []Verdict, width int) error {
	if len(vs) == 0 {
		return nil
	}
	if width <= 0 {
		width = defaultWidth
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("\n" + heading("judge verdicts", width) + "\n")
	pair := ""
	for _, v := range vs {
		if v.Pair != pair {
			pair = v.Pair
			head := v.Pair
			if v.A != "" {
				head += fmt.Sprintf(" (A = %s, B = %s)", v.A, v.B)
			}
			for _, l := range wrap(head, width) {
				bw.WriteString(l + "\n")
			}
		}
		if v.Failed != "" {
			writeIndented(bw, "failed: "+v.Failed, "  ", width)
			continue
		}
		head := v.Dimension
		if v.Sample > 0 {
			head += fmt.Sprintf(" (sample %d)", v.Sample)
		}
		head += ": " + outcomeText(v.Outcome)
		switch {
		case v.Identical:
			head += " (identical answers, the judge was not asked)"
		case len(v.Calls) == 2 && v.Calls[0].Winner != v.Calls[1].Winner:
			head += " (the two orders disagree)"
		}
		writeIndented(bw, head, "  ", width)
		for _, c := range v.Calls {
			line := fmt.Sprintf("%s shown first → %s", c.First, outcomeText(c.Winner))
			if j := flatten(c.Justification); j != "" {
				line += ": " + j
			}
			writeIndented(bw, line, "    ", width)
		}
	}
	return bw.Flush()
}

func outcomeText(winner string) string {
	switch winner {
	case "tie", "":
		return "tie"
	}
	return winner + " won"
}

// writeIndented wraps s to width with indent before every line.
func writeIndented(bw *bufio.Writer, s, indent string, width int) {
	for _, l := range wrap(s, width-cells(indent)) {
		bw.WriteString(indent + l + "\n")
	}
}

// heading is a rule across width with a title in it.
func heading(title string, width int) string {
	t := "══ " + title + " "
	return t + strings.Repeat("═", max(0, width-cells(t)))
}
