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
			fmt.Fprintf(e.stdout, "checking %s (%s): its length, every page's checksum, SQLite's integrity check\n", path, size)
			res, err := ledger.Check(c.Context, path)
			if err != nil {
				return err
			}
			if !res.Summed && res.Pages > 0 {
				fmt.Fprintf(e.stdout, "note: %s was made before ac3 kept a checksum on every page, so a changed byte inside a record can pass this check; any command that writes the run (e.g. 'ac3 run' again) adds them\n", path)
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
			if !res.OK && rep.Copied() == 0 {
				// An empty run file would pass for a recovery; leave none.
				for _, suffix := range []string{"", "-wal", "-shm", ledger.LockSuffix} {
					os.Remove(to + suffix)
				}
				return fmt.Errorf("nothing could be recovered from %s (%s): no record could be read, so no new run was written; ingest the inputs into a new run to start again", path, res.FirstProblem())
			}
			if rep.Lost() {
				fmt.Fprintf(e.stdout, "\nrecovered %d records into %s (checked sound, every copied record read back); the records counted as lost above could not be read: run the same commands with --db %s to redo that work (answers already paid for are in its cache)\n", rep.Copied(), to, to)
				return nil
			}
			fmt.Fprintf(e.stdout, "\nrecovered every record into %s (checked sound, every copied record read back); run the same commands with --db %s\n", to, to)
			return nil
		},
	}
}
