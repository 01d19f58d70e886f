package report

import (
	"net/url"
	"strconv"
	"strings"
)

// DefaultViewBase is where 'ac3 view' listens unless told otherwise; the
// report's links into the view start with it (Options.ViewBase).
const DefaultViewBase = "http://127.0.0.1:8080"

// viewLinks builds the report's links into 'ac3 view'. The paths and
// parameters follow the view's URL scheme (run/view): every table row of
// report.html opens the items behind its numbers there. The links are
// absolute, made from a base, so report.html still opens as a file of its
// own and its in-page anchors (#win-rates) do not resolve against the view.
// Parameters the view does not know are ignored by it, so a narrower link
// still lands on a superset of the items.
type viewLinks struct {
	base string // no trailing slash
}

func newViewLinks(base string) viewLinks {
	if base == "" {
		base = DefaultViewBase
	}
	return viewLinks{base: strings.TrimRight(base, "/")}
}

// link returns base+path with the query made of kv (key, value, key,
// value, ...), empty values left out, in the order given so the report's
// bytes do not depend on map order.
func (v viewLinks) link(path string, kv ...string) string {
	var q strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if q.Len() > 0 {
			q.WriteByte('&')
		}
		q.WriteString(url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1]))
	}
	base := v.base
	if base == "" { // a Report not made by Build
		base = DefaultViewBase
	}
	if q.Len() == 0 {
		return base + path
	}
	return base + path + "?" + q.String()
}

// run is the view's run page.
func (v viewLinks) run() string { return v.link("/") }

// verdicts lists a judge variant's verdicts on dimension dim; kv narrows
// them (winner, type, turn).
func (v viewLinks) verdicts(pair, dim string, kv ...string) string {
	return v.link("/verdicts", append([]string{"pair", pair, "dim", dim}, kv...)...)
}

// onlyArm lists the turns of a McNemar cell: the arm of pair won against
// the reference and the other arm (of the pair vs) did not. The view names
// a winner by its side of the pair, a or b.
func (v viewLinks) onlyArm(pair, arm, vs, dim string) string {
	return v.verdicts(pair, dim, "winner", sideOf(pair, arm), "vs", vs)
}

// sideOf is "a" when strategy is the first of the judge variant pair
// ("A:B" or "A:B/context"), else "b".
func sideOf(pair, strategy string) string {
	p, _, _ := strings.Cut(pair, "/")
	if a, _, _ := strings.Cut(p, ":"); a == strategy {
		return "a"
	}
	return "b"
}

// conversations is the filtered list of conversations.
func (v viewLinks) conversations(kv ...string) string {
	return v.link("/conversations", kv...)
}

// strategy lists the conversations stage (curate, respond) did with
// strategy s; kv narrows them (gate, type, turn). The view filters on
// done=STAGE; until it reads the other keys it ignores them and lists
// every conversation the stage did.
func (v viewLinks) strategy(stage, s string, kv ...string) string {
	return v.conversations(append([]string{"done", stage, "strategy", s}, kv...)...)
}

// turn opens one user turn of a conversation at the part named by part:
// the view's anchors are "turn-N" and "verdicts-N".
func (v viewLinks) turn(conv string, turn int, part string) string {
	return v.link("/conversation/"+url.PathEscape(conv), "turn", strconv.Itoa(turn)) + "#" + part + "-" + strconv.Itoa(turn)
}
