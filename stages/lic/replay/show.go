package replay

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Show writes the grades stored for one turn of one trajectory (turn 0:
// every turn), one block per strategy and rerun: the status, what was
// graded and how it was found, the reference, the check and the reason.
// It writes nothing when the conversation has no grades.
func Show(ctx context.Context, w io.Writer, units UnitReader, convID string, turn int) error {
	got, err := units.ConversationUnits(ctx, StageName, convID, turn)
	if err != nil {
		return fmt.Errorf("reading grades of %s: %w", convID, err)
	}
	if len(got) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nLiC grades (%s)\n", StageName)
	for _, u := range got {
		if u.Status != "done" {
			fmt.Fprintf(w, "  %s turn %d: %s: %s\n", u.Variant, u.Turn, u.Status, u.Error)
			continue
		}
		o, err := Decode(u.Output)
		if err != nil {
			return err
		}
		for _, r := range o.Reruns {
			g := r.Grade
			fmt.Fprintf(w, "  %s turn %d rerun %d: %s — %s\n", u.Variant, u.Turn, r.Index, strings.ToUpper(string(g.Status)), g.Reason)
			line := func(k, v string) {
				if v = strings.TrimSpace(v); v != "" {
					fmt.Fprintf(w, "      %-9s %s\n", k+":", strings.ReplaceAll(v, "\n", "\n                "))
				}
			}
			line("artifact", g.Artifact)
			line("found by", g.Extraction)
			line("expected", g.Expected)
			line("check", g.Check)
		}
	}
	return nil
}
