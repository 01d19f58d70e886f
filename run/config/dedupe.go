package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/run"
)

// dedupe is input.filter.dedupe: true or exact drops exact
// duplicates, near also near duplicates over the user turns (tuned by
// near_threshold and near_shingle), false or absent neither.
type dedupe string

// The values of a dedupe once read.
const (
	dedupeOff   dedupe = ""
	dedupeExact dedupe = "exact"
	dedupeNear  dedupe = "near"
)

// UnmarshalYAML reads true, false, exact or near, and describes anything
// else in the file's terms, as the strict decoder does for other settings.
func (d *dedupe) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		switch strings.ToLower(n.Value) {
		case "true", string(dedupeExact):
			*d = dedupeExact
			return nil
		case string(dedupeNear):
			*d = dedupeNear
			return nil
		case "false", "":
			*d = dedupeOff
			return nil
		}
	}
	got := "`" + n.Value + "`"
	switch n.Kind {
	case yaml.SequenceNode:
		got = "a list"
	case yaml.MappingNode:
		got = "a section of settings"
	}
	return fmt.Errorf("line %d: input.filter.dedupe: %s where true, false, exact or near is expected", n.Line, got)
}

// checkNear refuses near dedupe's settings without near dedupe.
func (c *File) checkNear() error {
	in := c.Input.Filter
	if in.Dedupe == dedupeNear {
		return nil
	}
	if in.NearThreshold != 0 {
		return fmt.Errorf("input.filter.near_threshold: applies to near dedupe only; set input.filter.dedupe: near")
	}
	if in.NearShingle != 0 {
		return fmt.Errorf("input.filter.near_shingle: applies to near dedupe only; set input.filter.dedupe: near")
	}
	return nil
}

// near is the file's near dedupe; nil when off. Zero settings take the
// defaults (filter.NearOptions).
func (c *File) near() *run.NearDedupe {
	in := c.Input.Filter
	if in.Dedupe != dedupeNear {
		return nil
	}
	return &run.NearDedupe{Threshold: in.NearThreshold, ShingleWords: in.NearShingle}
}
