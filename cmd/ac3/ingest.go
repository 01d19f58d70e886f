package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/io/arrowipc"
	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/io/record"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/stages/filter"
)

// filterFlags are the ingest filters, shared by ingest and convert.
func filterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Value: "auto", Usage: "input format: auto, wildchat, openai, sharegpt, lic, canonical, parquet, arrow"},
		&cli.StringSliceFlag{Name: "language", Usage: "keep only these languages (WildChat's `language` field, e.g. English or en); repeat or comma-separate. Formats without a language field are kept (see --unknown-language)"},
		&cli.StringFlag{Name: "unknown-language", Value: "keep", Usage: "with --language, what to do with conversations whose format has no language field: keep or drop"},
		&cli.IntFlag{Name: "min-turns", Usage: "drop conversations with fewer user turns (the papers use 5)"},
		&cli.IntFlag{Name: "max-turns", Usage: "drop conversations with more user turns (the papers use 10)"},
		&cli.StringSliceFlag{Name: "domain", Usage: "keep conversations whose user messages match a keyword list: " + strings.Join(filter.Domains(), ", ")},
		&cli.BoolFlag{Name: "drop-toxic", Usage: "drop conversations the source flags as toxic"},
		&cli.BoolFlag{Name: "drop-redacted", Usage: "drop conversations the source flags as redacted"},
		&cli.BoolFlag{Name: "dedupe", Usage: "drop exact duplicates (same system message, roles and texts)"},
		&cli.IntFlag{Name: "max-message-bytes", Usage: "drop conversations with a message longer than this"},
		&cli.IntFlag{Name: "max-line-bytes", Value: 64 << 20, Usage: "quarantine input lines longer than this"},
	}
}

// filterSettings is the canonical form of the filters, stored in the run.
type filterSettings struct {
	Languages       []string `json:"languages,omitempty"`
	UnknownLanguage string   `json:"unknown_language,omitempty"`
	MinUserTurns    int      `json:"min_user_turns,omitempty"`
	MaxUserTurns    int      `json:"max_user_turns,omitempty"`
	Domains         []string `json:"domains,omitempty"`
	DropToxic       bool     `json:"drop_toxic,omitempty"`
	DropRedacted    bool     `json:"drop_redacted,omitempty"`
	Dedupe          bool     `json:"dedupe,omitempty"`
	MaxMessageBytes int      `json:"max_message_bytes,omitempty"`
}

func (s filterSettings) options() filter.Options {
	return filter.Options{
		Languages: s.Languages, UnknownLanguage: s.UnknownLanguage,
		MinUserTurns: s.MinUserTurns, MaxUserTurns: s.MaxUserTurns,
		Domains: s.Domains, DropToxic: s.DropToxic, DropRedacted: s.DropRedacted,
		MaxMessageBytes: s.MaxMessageBytes,
	}
}

func (s filterSettings) canonical() string {
	sort.Strings(s.Languages)
	sort.Strings(s.Domains)
	b, _ := json.Marshal(s)
	return string(b)
}

func filterSettingsFrom(c *cli.Context) filterSettings {
	return filterSettings{
		Languages: splitList(c.StringSlice("language")), UnknownLanguage: c.String("unknown-language"),
		MinUserTurns: c.Int("min-turns"), MaxUserTurns: c.Int("max-turns"),
		Domains:   splitList(c.StringSlice("domain")),
		DropToxic: c.Bool("drop-toxic"), DropRedacted: c.Bool("drop-redacted"),
		Dedupe: c.Bool("dedupe"), MaxMessageBytes: c.Int("max-message-bytes"),
	}
}

func keepFunc(s filterSettings) (ingest.Keep, error) {
	f, err := filter.New(s.options())
	if err != nil {
		return nil, err
	}
	return func(c *conv.Conversation) (bool, string) {
		ok, r := f.Check(c)
		return ok, string(r)
	}, nil
}

func opener(format string, maxLine int) ingest.Opener {
	return func(ctx context.Context, path string) (record.Reader, string, error) {
		return detect.Open(ctx, path, detect.Options{
			Format:       format,
			MaxLineBytes: maxLine,
			OpenParquet:  parquetio.OpenReader,
			OpenArrow:    arrowipc.OpenReader,
		})
	}
}

func ingestCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "ingest",
		Usage:     "load conversation files into a run, with filters",
		ArgsUsage: "FILE...",
		Description: `Reads each FILE (any supported format, optionally .zst or .gz), applies the
filters, and stores the kept conversations in the run. Every dropped
conversation is counted by reason; every record that cannot be read (bad JSON,
a line cut short, an unknown role, no user message, invalid UTF-8, a missing or
Python-repr conversation field) is quarantined with its file, line and reason,
and the run goes on. Counts are printed at the end and by 'ac3 status'.

Ingest resumes: run it again after an interruption and it continues each file
from its last commit; files already read are skipped. A run keeps the filters
it was started with.

Examples:
   ac3 ingest --db run.db fixtures/wildchat/wildchat-1m-sample10.jsonl
   ac3 ingest --db run.db --language English --min-turns 5 --max-turns 10 \
       --domain coding,math --drop-toxic --dedupe shard-*.jsonl.zst`,
		Flags: append([]cli.Flag{dbFlag}, filterFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fmt.Errorf("no input files: pass one or more FILEs")
			}
			l, err := openRun(c.Context, c, false)
			if err != nil {
				return err
			}
			defer l.Close()
			return runIngest(c.Context, e, l, c.Args().Slice(), filterSettingsFrom(c), c.String("format"), c.Int("max-line-bytes"))
		},
	}
}

func runIngest(ctx context.Context, e *env, l *ledger.Ledger, files []string, fs filterSettings, format string, maxLine int) error {
	keep, err := keepFunc(fs)
	if err != nil {
		return err
	}
	m := progress.Start(e.stderr, "ingest", "records", 0)
	sum, err := ingest.Run(ctx, l, files, ingest.Options{
		Open: opener(format, maxLine), Keep: keep, Dedupe: fs.Dedupe,
		Settings: fs.canonical(), Stop: e.stop,
		OnBatch: func(_ string, n int64, _ ledger.IngestResult, _ int) { m.Add(n, 0) },
	})
	m.Stop()
	printIngest(e.stdout, sum)
	return err
}

func printIngest(w io.Writer, sum ingest.Summary) {
	var kept, bad, dropped int64
	drops := map[string]int64{}
	for _, f := range sum.Files {
		switch {
		case f.Skipped:
			fmt.Fprintf(w, "%s: already ingested, skipped\n", f.Path)
			continue
		case f.Resumed > 0:
			fmt.Fprintf(w, "%s (%s): resumed after record %d; ", f.Path, f.Format, f.Resumed)
		default:
			fmt.Fprintf(w, "%s (%s): ", f.Path, f.Format)
		}
		var d int64
		for k, v := range f.Dropped {
			drops[k] += v
			d += v
		}
		fmt.Fprintf(w, "%d records, %d kept, %d dropped, %d quarantined\n", f.Records, f.Kept, d, f.Bad)
		kept, bad, dropped = kept+f.Kept, bad+f.Bad, dropped+d
	}
	fmt.Fprintf(w, "kept %d conversations; dropped %d; quarantined %d\n", kept, dropped, bad)
	if dropped > 0 {
		printCounts(w, "dropped by reason", drops, dropped)
	}
	if bad > 0 {
		fmt.Fprintln(w, "quarantined records: see 'ac3 status' or 'ac3 export --what quarantine'")
	}
	if sum.Stopped {
		fmt.Fprintln(w, "stopped before the end; run the same command again to continue")
	}
}
