package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/pipeline/ledger"
)

func runCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run the stages a config file lists, resumably",
		Description: `Runs, in order, what the config file asks for: ingest (input.files with
input.filter), curate (stages.curate), then each export. Run it again after an
interruption and it does only what is missing; run it on a finished run and it
does nothing and says so. --dry-run prints the plan and the amount of work
without doing any.

Config sketch (YAML; ${VAR} and ${VAR:-default} are taken from the environment;
relative paths are relative to the config file):

   run:    {db: runs/demo.db, out: runs/demo/, workers: 2}
   input:
     files: [../wildchat/*.jsonl]
     format: auto
     filter: {language: [English], user_turns: {min: 2, max: 10}, dedupe: true}
   stages:
     curate: {from_turn: 2, strategies: [fc, ao, lt, de, concat, filler]}
   export:
     - {what: curated, format: parquet}
     - {what: quarantine, format: jsonl}

Example:
   ac3 run --config fixtures/configs/wildchat.yaml
   ac3 run --config fixtures/configs/wildchat.yaml --dry-run`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the run's config file"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan and unit counts, change nothing"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := loadConfig(c.String("config"), e.getenv)
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				return dryRun(c, e, cfg)
			}
			if cfg.Run.Out != "" {
				if err := os.MkdirAll(cfg.Run.Out, 0o755); err != nil {
					return fmt.Errorf("creating %s: %w", cfg.Run.Out, err)
				}
			}
			l, err := ledger.Open(c.Context, cfg.Run.DB, ledger.Options{})
			if err != nil {
				return err
			}
			defer l.Close()
			ctx := c.Context
			if len(cfg.Input.Files) > 0 {
				fmt.Fprintf(e.stdout, "== ingest (%d files)\n", len(cfg.Input.Files))
				if err := runIngest(ctx, e, l, cfg.Input.Files, cfg.filterSettings(), cfg.Input.Format, cfg.Input.MaxLineBytes); err != nil {
					return err
				}
				if stopped(e.stop) {
					return nil
				}
			}
			if done, err := runAnnotateFromConfig(ctx, e, l, cfg); err != nil || !done {
				return err
			}
			if cu := cfg.Stages.Curate; cu != nil {
				fmt.Fprintf(e.stdout, "== curate (%s)\n", strings.Join(cu.Strategies, ","))
				a, err := curateArgsFromConfig(cfg)
				if err != nil {
					return err
				}
				done, err := runCurate(ctx, e, l, a)
				if err != nil {
					return err
				}
				if !done {
					return nil
				}
			}
			if done, err := runRespondJudgeFromConfig(ctx, e, l, cfg); err != nil || !done {
				return err
			}
			if err := runReportFromConfig(ctx, e, l, cfg); err != nil {
				return err
			}
			for _, x := range cfg.Export {
				fmt.Fprintf(e.stdout, "== export %s (%s)\n", x.What, x.Format)
				if err := runExport(ctx, e, l, x.What, x.Format, defaultOut(cfg, x)); err != nil {
					return err
				}
			}
			fmt.Fprintf(e.stdout, "== done; 'ac3 status --db %s' shows the run\n", cfg.Run.DB)
			return nil
		},
	}
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func dryRun(c *cli.Context, e *env, cfg *config) error {
	w := e.stdout
	fmt.Fprintf(w, "plan for run %s (nothing will be changed)\n", cfg.Run.DB)
	var l *ledger.Ledger
	if _, err := os.Stat(cfg.Run.DB); err == nil {
		if l, err = ledger.Open(c.Context, cfg.Run.DB, ledger.Options{ReadOnly: true}); err != nil {
			return err
		}
		defer l.Close()
	}
	fmt.Fprintf(w, "1. ingest %d files with filters %s\n", len(cfg.Input.Files), cfg.filterSettings().canonical())
	for _, f := range cfg.Input.Files {
		state := "new"
		if l != nil {
			if in, ok, err := l.Input(c.Context, absPath(f)); err == nil && ok {
				state = fmt.Sprintf("%d records read", in.RecordsDone)
				if in.Finished {
					state = "already ingested"
				}
			}
		}
		size := "missing"
		if st, err := os.Stat(f); err == nil {
			size = fmt.Sprintf("%.1f MB", float64(st.Size())/1e6)
		}
		fmt.Fprintf(w, "   %s (%s, %s)\n", f, size, state)
	}
	if err := dryRunAnnotate(c.Context, w, l, cfg); err != nil {
		return err
	}
	if cfg.Stages.Curate != nil {
		a, err := curateArgsFromConfig(cfg)
		if err != nil {
			return err
		}
		if err := dryRunCurate(c.Context, w, l, a); err != nil {
			return err
		}
	}
	if err := dryRunRespondJudge(c.Context, w, l, cfg); err != nil {
		return err
	}
	for _, x := range cfg.Export {
		fmt.Fprintf(w, "export %s as %s to %s\n", x.What, x.Format, defaultOut(cfg, x))
	}
	return nil
}
