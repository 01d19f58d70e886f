package main

import (
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/pipeline/memgov"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/filter"
)

// filterFlags are the ingest filters, shared by ingest and convert.
func filterFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "format", Value: detect.Auto, Usage: "input format: " + detect.Auto + ", " + strings.Join(detect.Formats(), ", ")},
		&cli.StringSliceFlag{Name: "language", Usage: "keep only these languages (names as WildChat's `language` field has them, e.g. English, or codes such as en); repeat or comma-separate. Conversations whose input has no language field get one identified from their user turns (see --identify-language)"},
		&cli.StringFlag{Name: "unknown-language", Value: filter.UnknownKeep, Usage: "with --language, what to do with conversations whose language stays unknown (no user text to identify): " + filter.UnknownKeep + " or " + filter.UnknownDrop},
		&cli.StringFlag{Name: "identify-language", Value: filter.IdentifyAuto, Usage: "which conversations get their language from the identifier (" + filter.Detector + ", over the first " + strconv.Itoa(filter.IdentifyBytes) + " bytes of the user turns): " + filter.IdentifyAuto + " (those whose input has no language field, when --language is given), " + filter.IdentifyMissing + " (those, even without --language, to record their language), " + filter.IdentifyAlways + " (every one, replacing the input's field) or " + filter.IdentifyNever},
		&cli.IntFlag{Name: "min-turns", Usage: "drop conversations with fewer user turns (the papers use 5)"},
		&cli.IntFlag{Name: "max-turns", Usage: "drop conversations with more user turns (the papers use 10)"},
		&cli.StringSliceFlag{Name: "domain", Usage: "keep conversations whose user messages match a keyword list: " + strings.Join(filter.Domains(), ", ")},
		&cli.BoolFlag{Name: "drop-toxic", Usage: "drop conversations the source flags as toxic"},
		&cli.BoolFlag{Name: "drop-redacted", Usage: "drop conversations the source flags as redacted"},
		&cli.IntFlag{Name: "max-message-bytes", Usage: "drop conversations with a message longer than this"},
		&cli.IntFlag{Name: "max-line-bytes", Value: 64 << 20, Usage: "quarantine input lines longer than this"},
	}, dedupeFlags()...)
}

// filterFlagNames names the filter options as the flags spell them.
var filterFlagNames = map[string]string{
	"Languages": "--language", "UnknownLanguage": "--unknown-language",
	"MinUserTurns": "--min-turns", "MaxUserTurns": "--max-turns",
	"Domains": "--domain", "MaxMessageBytes": "--max-message-bytes",
	"IdentifyLanguage": "--identify-language",
	"NearThreshold":    "--near-threshold", "NearShingleWords": "--near-shingle",
}

// filterFrom reads the filter flags and the input files, the one place
// --dedupe is read (its legacy form moves a file into the file list).
func filterFrom(c *cli.Context) (run.Filter, []string, error) {
	mode, files, err := dedupeArgs(c)
	if err != nil {
		return run.Filter{}, nil, err
	}
	f := run.Filter{
		Languages: splitList(c.StringSlice("language")), UnknownLanguage: c.String("unknown-language"), IdentifyLanguage: c.String("identify-language"),
		MinUserTurns: c.Int("min-turns"), MaxUserTurns: c.Int("max-turns"),
		Domains:   splitList(c.StringSlice("domain")),
		DropToxic: c.Bool("drop-toxic"), DropRedacted: c.Bool("drop-redacted"),
		MaxMessageBytes: c.Int("max-message-bytes"),
		Dedupe:          mode != "",
	}
	if mode == run.DedupeNear {
		f.Near = &run.NearDedupe{Threshold: c.Float64("near-threshold"), ShingleWords: c.Int("near-shingle")}
	}
	return f, files, nil
}

func ingestCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "ingest",
		Usage:       "load conversation files into a run, with filters",
		ArgsUsage:   "FILE...",
		Description: run.IngestHelp(),
		Flags:       append(append([]cli.Flag{dbFlag()}, filterFlags()...), shardFlags()...),
		Action: func(c *cli.Context) error {
			memoryCeiling(e, memgov.Ingest)
			filter, files, err := filterFrom(c)
			if err != nil {
				return err
			}
			plan := run.Plan{DB: c.String("db"), Ingest: &run.Ingest{
				Files: files, Format: c.String("format"), MaxLineBytes: c.Int("max-line-bytes"), Filter: filter,
			}}
			return run.FilterError(execute(c, e, plan, runOptions(e)), filterFlagNames)
		},
	}
}
