package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/filter"
)

// The modes of --dedupe.
const (
	dedupeExact = "exact"
	dedupeNear  = "near"
)

// dedupeMode is the value of --dedupe: exact or near. Before near existed
// --dedupe took no value and was written just before the files; a value
// that is not a mode but names an existing file is still read that way, as
// exact dedupe and the first file (see dedupeArgs).
type dedupeMode struct {
	raw string
}

func (d *dedupeMode) Set(s string) error {
	d.raw = s
	return nil
}

func (d *dedupeMode) String() string { return d.raw }

// dedupeFlags are --dedupe and the settings of its near mode.
func dedupeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.GenericFlag{Name: "dedupe", Value: &dedupeMode{}, Usage: "drop duplicates: `MODE` exact drops conversations with the same system message, roles and texts as one kept before; near also drops those whose user turns nearly repeat a kept one's (MinHash over word shingles; pairs listed by 'ac3 export --what duplicates')"},
		&cli.Float64Flag{Name: "near-threshold", Value: filter.DefaultNearThreshold, Usage: fmt.Sprintf("with --dedupe near: the estimated Jaccard similarity of the user turns' shingle sets at or above which the later conversation is dropped (%v to 1)", filter.MinNearThreshold)},
		&cli.IntFlag{Name: "near-shingle", Value: filter.DefaultShingleWords, Usage: fmt.Sprintf("with --dedupe near: words per shingle (1 to %d); short chat prompts want few", filter.MaxShingleWords)},
	}
}

// dedupeArgs reads --dedupe and returns its mode ("" when off) with the
// command's arguments, which gain the first file back when --dedupe was
// written bare before the files, as before it took a mode.
func dedupeArgs(c *cli.Context) (mode string, args []string, err error) {
	args = c.Args().Slice()
	d, _ := c.Generic("dedupe").(*dedupeMode)
	if d == nil || !c.IsSet("dedupe") {
		return "", args, nil
	}
	switch m := strings.ToLower(strings.TrimSpace(d.raw)); m {
	case dedupeExact, dedupeNear, "true":
		if _, err := os.Stat(d.raw); err == nil {
			return "", nil, fmt.Errorf("--dedupe %s: a file named %s exists here; write --dedupe exact %s for the file, or ./%s", d.raw, d.raw, d.raw, d.raw)
		}
		if m == "true" {
			m = dedupeExact
		}
		return m, args, nil
	case "false", "off":
		return "", args, nil
	}
	if strings.HasPrefix(d.raw, "-") {
		return "", nil, fmt.Errorf("--dedupe takes a mode, %s or %s, and got the flag %s: write --dedupe %s (or %s) before it", dedupeExact, dedupeNear, d.raw, dedupeExact, dedupeNear)
	}
	if _, err := os.Stat(d.raw); err == nil {
		return dedupeExact, append([]string{d.raw}, args...), nil
	}
	return "", nil, fmt.Errorf("--dedupe %q: want %s or %s", d.raw, dedupeExact, dedupeNear)
}

// dedupeFilter sets f's deduplication from the flags.
func dedupeFilter(c *cli.Context, f *run.Filter) {
	mode, _, _ := dedupeArgs(c) // an error is reported where the files are read
	f.Dedupe = mode != ""
	if mode == dedupeNear {
		f.Near = &run.NearDedupe{Threshold: c.Float64("near-threshold"), ShingleWords: c.Int("near-shingle")}
	}
}
