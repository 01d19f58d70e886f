package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/view"
)

func viewCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "view",
		Usage:     "browse a run in a web browser (local, read-only)",
		ArgsUsage: "[RUN.db]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "the run file", EnvVars: []string{"AC3_DB"}},
			&cli.StringFlag{Name: "addr", Value: view.DefaultAddr, Usage: "host:port to listen on"},
			&cli.BoolFlag{Name: "expose", Usage: "allow an address other than loopback: whoever reaches it reads the whole run"},
		},
		Action: func(c *cli.Context) error {
			if err := view.CheckAddr(c.String("addr"), c.Bool("expose")); err != nil {
				return err
			}
			l, err := openReader(c, e)
			if err != nil {
				return err
			}
			defer l.Close()
			ctx, cancel := run.UntilStop(c.Context, e.stop)
			defer cancel()
			ready := func(url string) { fmt.Fprintf(e.stdout, "ac3 view: reading %s at %s (Ctrl-C stops)\n", l.Path(), url) }
			return view.Serve(ctx, l, view.Options{Addr: c.String("addr"), Expose: c.Bool("expose"), Ready: ready})
		},
	}
}
