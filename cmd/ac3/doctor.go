package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
)

func doctorCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "doctor",
		Usage:       "check a run file page by page and recover what is readable",
		ArgsUsage:   "[RUN.db]",
		Description: ledger.DoctorHelp(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "the run file to check", EnvVars: []string{"AC3_DB"}},
			&cli.StringFlag{Name: "recover-to", Usage: "copy every readable record into this new run file"},
		},
		Action: func(c *cli.Context) error {
			path := c.String("db")
			if path == "" {
				path = c.Args().First()
			}
			if path == "" {
				return fmt.Errorf("no run file: pass --db RUN.db")
			}
			to := c.String("recover-to")
			size := "?"
			if st, err := os.Stat(path); err == nil {
				size = fmt.Sprintf("%.1f MB", float64(st.Size())/1e6)
			}
			fmt.Fprintf(e.stdout, "checking %s (%s): SQLite integrity check, every page\n", path, size)
			res, err := ledger.Check(c.Context, path)
			if err != nil {
				return err
			}
			if res.OK {
				fmt.Fprintf(e.stdout, "ok: %s is sound\n", path)
				if res.NoteCleared {
					fmt.Fprintf(e.stdout, "the damage noted earlier in %s%s is no longer there; the note was removed\n", path, ledger.DamageSuffix)
				}
			} else {
				fmt.Fprintf(e.stdout, "damaged: the check found %d problem(s):\n", len(res.Problems))
				for _, p := range res.Problems {
					fmt.Fprintf(e.stdout, "   %s\n", p)
				}
			}
			if res.OK && to == "" {
				return nil
			}
			if to == "" {
				fmt.Fprintln(e.stdout, "\nwhat a recovery would keep (counted; nothing written):")
			} else {
				fmt.Fprintf(e.stdout, "\ncopying every readable record into %s\n", to)
			}
			rep, err := ledger.Salvage(c.Context, path, to)
			if err != nil {
				return err
			}
			rep.WriteText(e.stdout)
			if to == "" {
				fmt.Fprintf(e.stdout, "\nto copy them into a new run: ac3 doctor --db %s --recover-to NEW.db\n", path)
				return fmt.Errorf("run file %s is damaged (%s); nothing was changed", path, res.FirstProblem())
			}
			fmt.Fprintf(e.stdout, "\nrecovered into %s; run the same commands with --db %s to redo what was lost\n", to, to)
			return nil
		},
	}
}
