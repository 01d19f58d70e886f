package main

import (
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
			path, err := runPath(c)
			if err != nil {
				return err
			}
			return ledger.Doctor(c.Context, path, c.String("recover-to"), e.stdout)
		},
	}
}
