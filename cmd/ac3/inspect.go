package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/curate/inspect"
)

func inspectCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "inspect",
		Usage:       "show the curated contexts of one turn side by side",
		Description: inspect.Help(),
		Flags: []cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "conversation", Aliases: []string{"c"}, Required: true, Usage: "conversation id"},
			&cli.IntFlag{Name: "turn", Aliases: []string{"t"}, Usage: "user turn"},
			&cli.StringFlag{Name: "strategies", Usage: "only these strategies (default: all curated)"},
			&cli.IntFlag{Name: "width", Usage: "output width (default: the terminal's, else 160)"},
		},
		Action: func(c *cli.Context) error {
			l, err := openReader(c, e)
			if err != nil {
				return err
			}
			defer l.Close()
			return run.Inspect(c.Context, e.stdout, l, c.String("conversation"), c.Int("turn"), splitList([]string{c.String("strategies")}), c.Int("width"))
		},
	}
}
