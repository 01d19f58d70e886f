package config

import (
	"fmt"
	"math"

	"gopkg.in/yaml.v3"
)

// checkBudget refuses a run.budget_usd that caps nothing: a negative
// budget (or .nan) would otherwise be taken as no cap, or stop the run at
// its first call, without a word about the setting.
func checkBudget(doc *yaml.Node, budget float64) error {
	if budget >= 0 {
		return nil
	}
	where := "run.budget_usd"
	if n := lookup(doc, "run", "budget_usd"); n != nil {
		where = fmt.Sprintf("line %d: %s", n.Line, where)
	}
	if math.IsNaN(budget) {
		return fmt.Errorf("%s: not a number, want 0 (no cap) or a positive number of dollars", where)
	}
	return fmt.Errorf("%s: %v, want 0 (no cap) or a positive number of dollars", where, budget)
}

// lookup returns the value at the path of keys under a document or
// mapping node, nil when there is none.
func lookup(n *yaml.Node, keys ...string) *yaml.Node {
	for n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if len(keys) == 0 {
		return n
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == keys[0] {
			return lookup(n.Content[i+1], keys[1:]...)
		}
	}
	return nil
}
