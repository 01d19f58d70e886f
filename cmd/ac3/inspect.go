package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/lic/replay"
)

func inspectCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "inspect",
		Usage:       "show the curated contexts of one turn side by side",
		Description: curate.InspectHelp(),
		Flags: []cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "conversation", Aliases: []string{"c"}, Required: true, Usage: "conversation id"},
			&cli.IntFlag{Name: "turn", Aliases: []string{"t"}, Usage: "user turn"},
			&cli.StringFlag{Name: "strategies", Usage: "only these strategies (default: all curated)"},
			&cli.IntFlag{Name: "width", Usage: "output width (default: the terminal's, else 160)"},
		},
		Action: func(c *cli.Context) error {
			memoryCeiling(e, readerMemoryLimit)
			l, err := openRun(c, true)
			if err != nil {
				return err
			}
			defer l.Close()
			id := c.String("conversation")
			s, ok, err := l.Conversation(c.Context, id)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("no conversation %q in %s", id, l.Path())
			}
			ctxs, turns, err := curate.CurrentContexts(c.Context, l, id, c.Int("turn"), splitList([]string{c.String("strategies")}))
			if err != nil {
				return err
			}
			if len(ctxs) == 0 {
				return fmt.Errorf("conversation %s has no curated turn %d: run 'ac3 curate' (it has %d user turns)", id, c.Int("turn"), s.Conv.UserTurns())
			}
			if c.Int("turn") == 0 {
				fmt.Fprintf(e.stdout, "conversation %s (%s, %d user turns): curated turns %v\n", id, s.Conv.Source, s.Conv.UserTurns(), turns)
				fmt.Fprintln(e.stdout, "pick one with --turn")
				return nil
			}
			width := c.Int("width")
			if width <= 0 {
				width = 160
				if f, ok := e.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
					if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 40 {
						width = w
					}
				}
			}
			fmt.Fprintf(e.stdout, "conversation %s, turn %d (%s)\n\n", id, c.Int("turn"), s.Conv.Source)
			if err := curate.Render(e.stdout, s.Conv, ctxs, width); err != nil {
				return err
			}
			return replay.Show(c.Context, e.stdout, l, id, c.Int("turn"))
		},
	}
}
