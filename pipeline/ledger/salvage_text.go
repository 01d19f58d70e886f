package ledger

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// FirstProblem is the first problem the check found, and how many more.
func (res CheckResult) FirstProblem() string {
	if len(res.Problems) == 0 {
		return "no details"
	}
	p := res.Problems[0]
	if len(res.Problems) > 1 {
		p += fmt.Sprintf(", and %d more", len(res.Problems)-1)
	}
	return strings.TrimSpace(p)
}

// WriteText prints what a recovery copied and lost, one line per kind of
// record.
func (rep SalvageReport) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tcopied\tlost\t")
	for _, c := range rep.Counts {
		lost := fmt.Sprint(c.Lost)
		if c.Lost < 0 {
			lost = "unknown"
		}
		if c.Skipped > 0 {
			lost += fmt.Sprintf(" (%d unreadable stretch(es))", c.Skipped)
		}
		fmt.Fprintf(tw, "   %s\t%d\t%s\t\n", c.What, c.Copied, lost)
	}
	tw.Flush()
}
