package run

import (
	"context"
	"fmt"
	"io"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/inspect"
	"github.com/ac3/ac3/stages/lic/replay"
)

// Inspect prints, as 'ac3 inspect' shows them, the contexts the strategies
// (nil: every one curated) built for user turn turn of conversation id,
// side by side in width columns (0: the terminal's, else 160), then the
// replay grades of a Lost in Conversation task. Turn 0 lists the
// conversation's curated turns instead.
func Inspect(ctx context.Context, w io.Writer, l *ledger.Ledger, id string, turn int, strategies []string, width int) error {
	if width <= 0 {
		width = 160
		if cols, ok := progress.TerminalWidth(w); ok && cols > 40 {
			width = cols
		}
	}
	s, ok, err := l.Conversation(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no conversation %q in %s", id, l.Path())
	}
	ctxs, turns, err := curate.CurrentContexts(ctx, l, id, turn, strategies)
	if err != nil {
		return err
	}
	if len(ctxs) == 0 {
		return fmt.Errorf("conversation %s has no curated turn %d: run 'ac3 curate' (it has %d user turns)", id, turn, s.Conv.UserTurns())
	}
	if turn == 0 {
		fmt.Fprintf(w, "conversation %s (%s, %d user turns): curated turns %v\n", id, s.Conv.Source, s.Conv.UserTurns(), turns)
		fmt.Fprintln(w, "pick one with --turn")
		return nil
	}
	fmt.Fprintf(w, "conversation %s, turn %d (%s)\n\n", id, turn, s.Conv.Source)
	if err := inspect.Render(w, s.Conv, ctxs, width); err != nil {
		return err
	}
	return replay.Show(ctx, w, l, id, turn)
}
