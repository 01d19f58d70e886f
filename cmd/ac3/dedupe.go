package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/filter"
)

// dedupeMode is the value of --dedupe as given, read by run.DedupeArgs.
type dedupeMode struct{ raw string }

func (d *dedupeMode) Set(s string) error { d.raw = s; return nil }
func (d *dedupeMode) String() string     { return d.raw }

// dedupeFlags are --dedupe and the settings of its near mode.
func dedupeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.GenericFlag{Name: "dedupe", Value: &dedupeMode{}, Usage: "drop duplicates: `MODE` exact drops conversations with the same system message, roles and texts as one kept before; near also drops those whose user turns nearly repeat a kept one's (MinHash over word shingles; pairs listed by 'ac3 export --what duplicates')"},
		&cli.Float64Flag{Name: "near-threshold", Value: filter.DefaultNearThreshold, Usage: fmt.Sprintf("with --dedupe near: the estimated Jaccard similarity of the user turns' shingle sets at or above which the later conversation is dropped (%v to 1)", filter.MinNearThreshold)},
		&cli.IntFlag{Name: "near-shingle", Value: filter.DefaultShingleWords, Usage: fmt.Sprintf("with --dedupe near: words per shingle (1 to %d); short chat prompts want few", filter.MaxShingleWords)},
	}
}

// dedupeArgs reads --dedupe (run.DedupeArgs): its mode ("" when off) and
// the command's file arguments, which gain the first file back when
// --dedupe was written bare before the files.
func dedupeArgs(c *cli.Context) (mode string, args []string, err error) {
	d, _ := c.Generic("dedupe").(*dedupeMode)
	if d == nil || !c.IsSet("dedupe") {
		return "", c.Args().Slice(), nil
	}
	return run.DedupeArgs(d.raw, c.Args().Slice())
}
