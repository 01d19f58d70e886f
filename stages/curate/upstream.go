package curate

import "github.com/ac3/ac3/pipeline/ledger"

// PickUpstream picks the variant of another stage a strategy reads, from
// that stage's current plan: the one asked for, else llm, else heuristic.
// ok is false when the plan has none of them (the stage has not run, or not
// with the variant asked for).
func PickUpstream(plan []ledger.Variant, want string) (Upstream, bool) {
	for _, pref := range []string{want, "llm", "heuristic"} {
		if pref == "" {
			continue
		}
		for _, v := range plan {
			if v.Name == pref {
				return Upstream{Variant: v.Name, Version: v.Version}, true
			}
		}
		if want != "" {
			break
		}
	}
	return Upstream{}, false
}
