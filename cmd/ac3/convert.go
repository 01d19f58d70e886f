package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/record"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/convert"
	"github.com/ac3/ac3/pipeline/progress"
)

func convertCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "convert",
		Usage:     "stream files through the filters into canonical Parquet, Arrow or JSONL, without a run",
		ArgsUsage: "FILE...",
		Description: `A one-pass conversion for when you want a filtered file, not a run: no run
file, no resume. The output format follows --out: .parquet, .arrow, .jsonl
(.jsonl.zst, .jsonl.gz). Bad records are counted by reason and listed with
--show-bad. --dedupe needs a run (it remembers what it has seen): use ingest.

Example:
   ac3 convert --language English --min-turns 5 --max-turns 10 \
       --out english-5-10.parquet wildchat-shard-*.jsonl.zst`,
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "out", Required: true, Usage: "output file (.parquet, .arrow, .jsonl, .jsonl.zst)"},
			&cli.BoolFlag{Name: "show-bad", Usage: "print each bad record's file, line and reason"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fmt.Errorf("no input files: pass one or more FILEs")
			}
			fs := filterSettingsFrom(c)
			if fs.Dedupe {
				return fmt.Errorf("--dedupe needs a run file: use 'ac3 ingest --dedupe' then 'ac3 export'")
			}
			keep, err := keepFunc(fs)
			if err != nil {
				return err
			}
			out := c.String("out")
			w, err := convert.Create(out)
			if err != nil {
				return err
			}
			var onBad func(record.Bad)
			if c.Bool("show-bad") {
				onBad = func(b record.Bad) { fmt.Fprintf(e.stderr, "%s: %s: %s\n", b.Source, b.Reason, b.Detail) }
			}
			m := progress.Start(e.stderr, "convert", "conversations", 0)
			counted := countingWriter{w: w, m: m}
			// Text inputs are split on one goroutine and decoded on all cores;
			// columnar inputs go through the plain reader.
			text := convert.WithText(detect.Options{Format: c.String("format"), MaxLineBytes: c.Int("max-line-bytes")})
			st, err := convert.Run(c.Context, c.Args().Slice(), opener(c.String("format"), c.Int("max-line-bytes")), keep, counted, onBad, text)
			m.Stop()
			if err != nil {
				w.Abort()
				return err
			}
			if err := w.Close(); err != nil {
				return fmt.Errorf("finishing %s: %w", out, err)
			}
			var dropped, bad int64
			for _, n := range st.Dropped {
				dropped += n
			}
			badBy := map[string]int64{}
			for r, n := range st.Bad {
				bad += n
				badBy[string(r)] = n
			}
			fmt.Fprintf(e.stdout, "read %d records: wrote %d conversations to %s\n", st.Records, st.Kept, out)
			printCounts(e.stdout, "dropped by filters", st.Dropped, dropped)
			printCounts(e.stdout, "bad records skipped", badBy, bad)
			return nil
		},
	}
}

type countingWriter struct {
	w convert.FileWriter
	m *progress.Meter
}

func (c countingWriter) Write(cv *conv.Conversation) error {
	c.m.Add(1, 0)
	return c.w.Write(cv)
}
