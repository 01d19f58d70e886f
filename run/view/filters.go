package view

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/compint/measure"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/lic/simulate"
	"github.com/ac3/ac3/stages/pollution"
)

// filterKeys are the parameters of /conversations that select, in the
// order the filter bar shows them (see the package doc).
func filterKeys() []string {
	return []string{"source", "lang", "turns", "turns_min", "turns_max", "origin", "type", "pollution", "reply_pollution", "constraints", "pair", "verdict", "dim", "lic", "lic_result", "compint", "done", "strategy", "turn", "gate", "failed", "pending", "variant", "q"}
}

// filter is a parsed /conversations query.
type filter struct {
	Values url.Values // the selecting parameters as given, for links
	Browse ledger.Browse
	Text   string // q, lowered
	// Active lists the filters applied, as "key: value", for the page
	// to show (each with a link that drops it).
	Active []activeFilter
}

type activeFilter struct {
	Key, Value string
	Without    string // the query string without this filter
}

// parseFilter turns a query into a Browse over the run's current plans.
// A value that cannot mean anything (a turn count that is not a number, a
// verdict without a pair) is an error naming the parameter.
func parseFilter(ctx context.Context, l *ledger.Ledger, q url.Values) (filter, error) {
	f := filter{Values: url.Values{}}
	for _, k := range filterKeys() {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			f.Values.Set(k, v)
		}
	}
	get := f.Values.Get
	plans, err := l.Plans(ctx)
	if err != nil {
		return f, err
	}
	b := &f.Browse
	if src := get("source"); src != "" {
		ins, err := l.Inputs(ctx)
		if err != nil {
			return f, err
		}
		for _, in := range ins {
			if in.Path == src {
				b.InputID = in.ID
			}
		}
		if b.InputID == 0 {
			return f, fmt.Errorf("source: the run has no input %q", src)
		}
	}
	b.Language, b.Origin = get("lang"), get("origin")
	num := func(k string) (int, error) {
		s := get(k)
		if s == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: %q is not a count of turns", k, s)
		}
		return n, nil
	}
	if b.MinTurns, err = num("turns_min"); err != nil {
		return f, err
	}
	if b.MaxTurns, err = num("turns_max"); err != nil {
		return f, err
	}
	if n, err := num("turns"); err != nil {
		return f, err
	} else if n > 0 {
		b.MinTurns, b.MaxTurns = n, n
	}
	add := func(m ledger.UnitMatch) { b.Units = append(b.Units, m) }
	if t := get("type"); t != "" {
		if !slices.Contains(classify.Types(), t) && t != classify.Unknown {
			return f, fmt.Errorf("type: %q is not a turn type (%s)", t, strings.Join(classify.Types(), ", "))
		}
		m := ledger.UnitMatch{Stage: classify.StageName, Variants: plans[classify.StageName], Status: ledger.Done, JSON: []ledger.JSONCond{{Path: "$.type", Op: "=", Value: t}}}
		// With a turn (done=STAGE&turn=N) the type is that turn's, so
		// "turn 3 was feedback and gated-reset reset there" means the same
		// turn; a bad turn is refused below.
		if n, err := strconv.Atoi(get("turn")); err == nil && n > 0 && get("done") != "" {
			m.Turn = n
		}
		add(m)
	}
	if c := get("pollution"); c != "" {
		m := ledger.UnitMatch{Stage: pollution.StageName, Variants: datasetVariants(plans[pollution.StageName]), Status: ledger.Done, JSON: []ledger.JSONCond{{Path: "$.present", Op: "=", Value: 1}}}
		if c != "any" {
			m.JSON = append(m.JSON, ledger.JSONCond{Path: "$.category", Op: "=", Value: c})
		}
		add(m)
	}
	if c := get("reply_pollution"); c != "" {
		// The review of generated replies stores a label per sample.
		m := ledger.UnitMatch{Stage: pollution.StageName, Variants: responsesVariants(plans[pollution.StageName]), Status: ledger.Done, Each: "$.samples", JSON: []ledger.JSONCond{{Path: "$.label.present", Op: "=", Value: 1}}}
		if len(m.Variants) == 0 {
			return f, fmt.Errorf("reply_pollution: this run reviewed no generated replies")
		}
		if c != "any" {
			m.JSON = append(m.JSON, ledger.JSONCond{Path: "$.label.category", Op: "=", Value: c})
		}
		add(m)
	}
	switch c := get("constraints"); c {
	case "":
	case "1", "0":
		add(ledger.UnitMatch{Stage: constraints.StageName, Variants: plans[constraints.StageName], Status: ledger.Done, JSON: []ledger.JSONCond{{Path: "$.registry", Op: "len>", Value: 0}}, Absent: c == "0"})
	default:
		return f, fmt.Errorf("constraints: %q is neither 1 nor 0", c)
	}
	if pair := get("pair"); pair != "" {
		vs := pairVariants(plans[judge.StageName], pair)
		if len(vs) == 0 {
			return f, fmt.Errorf("pair: the run judged no pair %q", pair)
		}
		m := ledger.UnitMatch{Stage: judge.StageName, Variants: vs, Status: ledger.Done}
		if v := get("verdict"); v != "" {
			dim, err := dimension(get("dim"))
			if err != nil {
				return f, err
			}
			out, err := outcome(v)
			if err != nil {
				return f, fmt.Errorf("verdict: %w", err)
			}
			m.Each = "$.comparisons"
			m.JSON = []ledger.JSONCond{{Path: "$.outcome." + dim, Op: "=", Value: out}}
		}
		add(m)
	} else if get("verdict") != "" {
		return f, fmt.Errorf("verdict: name the pair too (pair=a:b)")
	}
	if task, res := get("lic"), get("lic_result"); task != "" || res != "" {
		m := ledger.UnitMatch{Stage: simulate.StageName, Variants: plans[simulate.StageName], Status: ledger.Done}
		if task != "" {
			m.JSON = append(m.JSON, ledger.JSONCond{Path: "$.task", Op: "=", Value: task})
		}
		switch res {
		case "":
		case "pass", "fail":
			m.JSON = append(m.JSON, ledger.JSONCond{Path: "$.grade.status", Op: "=", Value: res})
		default:
			return f, fmt.Errorf("lic_result: %q is neither pass nor fail", res)
		}
		add(m)
	}
	switch c := get("compint"); c {
	case "":
	case "retained", "lost":
		kept := 0
		if c == "retained" {
			kept = 1
		}
		m := ledger.UnitMatch{Stage: measure.StageName, Variants: plans[measure.StageName], Status: ledger.Done, JSON: []ledger.JSONCond{{Path: "$.retention.retained", Op: "=", Value: kept}}}
		// The measure stage's variants are the strategies measured, so
		// strategy narrows it as done=STAGE&strategy does.
		if st := get("strategy"); st != "" && get("done") == "" {
			if m.Variants = named(plans[measure.StageName], st); len(m.Variants) == 0 {
				return f, fmt.Errorf("strategy: CompInt measured no strategy %q", st)
			}
		}
		add(m)
	default:
		return f, fmt.Errorf("compint: %q is neither retained nor lost", c)
	}
	if s := get("done"); s != "" {
		m := ledger.UnitMatch{Stage: s, Variants: plans[s], Status: ledger.Done}
		if st := get("strategy"); st != "" {
			m.Variants = named(plans[s], st)
			if len(m.Variants) == 0 {
				return f, fmt.Errorf("strategy: stage %s has no variant %q", s, st)
			}
		}
		if t := get("turn"); t != "" {
			if m.Turn, err = strconv.Atoi(t); err != nil || m.Turn < 1 {
				return f, fmt.Errorf("turn: %q is not a user turn", t)
			}
		}
		switch g := get("gate"); g {
		case "":
		case "open", "closed":
			if s != curate.StageName {
				return f, fmt.Errorf("gate: only curate's strategies have a gate")
			}
			// A context stores its gate as "gate": true inside its info
			// ("a"), and leaves it out when closed.
			op := "="
			if g == "closed" {
				op = "is not"
			}
			m.JSON = append(m.JSON, ledger.JSONCond{Path: "$.a.gate", Op: op, Value: 1})
		default:
			return f, fmt.Errorf("gate: %q is neither open nor closed", g)
		}
		add(m)
	} else if (get("strategy") != "" && get("compint") == "") || get("gate") != "" || get("turn") != "" {
		return f, fmt.Errorf("strategy, turn and gate narrow a stage: name it with done=STAGE")
	}
	if s := get("pending"); s != "" {
		// A task not yet recorded has no units: pending in the variant
		// named (each variant has tasks of its own), or in every one.
		m := ledger.UnitMatch{Stage: s, Variants: plans[s], Absent: true}
		if v := get("variant"); v != "" {
			if m.Variants = named(plans[s], v); len(m.Variants) == 0 {
				return f, fmt.Errorf("variant: stage %s has no variant %q", s, v)
			}
		}
		if len(m.Variants) == 0 {
			return f, fmt.Errorf("pending: no stage %q is planned in this run", s)
		}
		add(m)
	}
	if s := get("failed"); s != "" {
		// The stage's current plan, as the conversation page shows its
		// failures: a failed unit of a replaced version is not a failure
		// of this run's work.
		m := ledger.UnitMatch{Stage: s, Status: ledger.Failed, Variants: plans[s]}
		if v := get("variant"); v != "" && s != "any" {
			if m.Variants = named(plans[s], v); len(m.Variants) == 0 {
				return f, fmt.Errorf("variant: stage %s has no variant %q", s, v)
			}
		}
		if s == "any" {
			m.Stage = ""
			for st := range plans {
				m.Stages = append(m.Stages, st)
			}
			slices.Sort(m.Stages)
			if len(m.Stages) == 0 {
				m.Stages = []string{"-"} // nothing planned: nothing failed
			}
		}
		add(m)
	}
	f.Text = strings.ToLower(get("q"))
	b.Decode = true // the list shows each conversation's first user turn
	for _, k := range filterKeys() {
		if v := f.Values.Get(k); v != "" {
			rest := cloneValues(f.Values)
			rest.Del(k)
			f.Active = append(f.Active, activeFilter{Key: k, Value: v, Without: rest.Encode()})
		}
	}
	return f, nil
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// named is the variants of vs called name.
func named(vs []ledger.Variant, name string) []ledger.Variant {
	var out []ledger.Variant
	for _, v := range vs {
		if v.Name == name {
			out = append(out, v)
		}
	}
	return out
}

// datasetVariants are the pollution variants that review the dataset's
// own replies (not respond's).
// responsesVariants are the pollution variants that review respond's
// generated replies.
func responsesVariants(vs []ledger.Variant) []ledger.Variant {
	var out []ledger.Variant
	for _, v := range vs {
		if _, ok := pollution.RespondVariant(v.Name); ok {
			out = append(out, v)
		}
	}
	return out
}

func datasetVariants(vs []ledger.Variant) []ledger.Variant {
	var out []ledger.Variant
	for _, v := range vs {
		if !strings.HasPrefix(v.Name, pollution.ResponsesVariant("")) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return []ledger.Variant{{Name: pollution.VariantDataset}}
	}
	return out
}

// pairVariants are the judge variants of pair "a:b": the variant named so,
// and those that add a context after a slash ("a:b/user_only").
func pairVariants(vs []ledger.Variant, pair string) []ledger.Variant {
	var out []ledger.Variant
	for _, v := range vs {
		if v.Name == pair || strings.HasPrefix(v.Name, pair+"/") {
			out = append(out, v)
		}
	}
	return out
}

func dimension(d string) (string, error) {
	if d == "" {
		return judge.Quality, nil
	}
	if !slices.Contains(judge.Dimensions(), d) {
		return "", fmt.Errorf("dim: %q is not a judged dimension (%s)", d, strings.Join(judge.Dimensions(), ", "))
	}
	return d, nil
}

// outcome is a winner as a query gives it (a, b, tie) in the form judge
// units store it.
func outcome(w string) (string, error) {
	switch strings.ToLower(w) {
	case "a":
		return "A", nil
	case "b":
		return "B", nil
	case "tie":
		return "tie", nil
	}
	return "", fmt.Errorf("%q is not a, b or tie", w)
}
