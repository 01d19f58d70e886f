package view

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/compint/measure"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/lic/replay"
	"github.com/ac3/ac3/stages/lic/simulate"
	"github.com/ac3/ac3/stages/pollution"
	"github.com/ac3/ac3/stages/respond"
)

type convData struct {
	ID, Source, Origin, Language, System string
	Seq                                  int64
	ParentLink                           string
	UserTurns                            int
	Focus                                int
	Strategies                           []strategyChoice // every curated strategy, with the link that shows or hides it
	Selected                             []string
	Turns                                []turnView
	LiC                                  []licView
	CompInt                              []compintView
	Stitched                             bool // a CompInt instance: the messages are the stitched context
	Meta                                 string
	Failed                               []failedView
	Problems                             []string // units that could not be read
}

type strategyChoice struct {
	Name   string
	Shown  bool
	Toggle string // link showing the set with this strategy toggled
}

type msgView struct {
	Index    int
	Role     string
	Text     string
	Polluted *pollution.Label // set on a reply labelled polluted
	SourceOf []int            // turns whose polluted reply names this one as a source
}

type turnView struct {
	Index       int
	Focus       bool
	User        msgView
	Replies     []msgView
	Types       []labelView
	Constraints *constraintsView
	Pollution   []pollution.Label
	Contexts    []ctxView
	Answers     []answerView
	Verdicts    []verdictView
	Grades      []gradeView
}

type labelView struct {
	Variant string
	classify.Label
}

type constraintsView struct {
	New, Registry []constraints.Constraint
}

type ctxView struct {
	Strategy         string
	Tokens, Messages int
	Rows             []ctxRow
	Dropped          []int // original messages before the turn left out
	Replaced, Added  int
	Info             curated.Info
	HasInfo          bool
	HasIssues        bool
}

type ctxRow struct {
	Role   string
	Origin string // where the message came from
	Kind   string // kept, replaced, added, joined
	Text   string
}

type answerView struct {
	Variant string
	respond.Output
}

type verdictView struct {
	Variant string
	judge.Output
	Dims []string
}

type gradeView struct {
	Variant string
	replay.Output
}

type licView struct {
	Variant string
	simulate.Trajectory
}

type compintView struct {
	Variant string
	measure.Output
}

type failedView struct {
	Stage, Variant string
	Turn           int
	Error          string
}

func (h *Handler) conversationPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	s, ok, err := h.l.Conversation(ctx, id)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if !ok {
		h.fail(w, r, http.StatusNotFound, fmt.Errorf("the run has no conversation %q", id))
		return
	}
	q := r.URL.Query()
	focus, _ := strconv.Atoi(q.Get("turn"))
	var want []string
	if v := q.Get("strategies"); v != "" {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !slices.Contains(want, p) {
				want = append(want, p)
			}
		}
	}
	d, err := h.conversation(ctx, s, focus, want)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	h.render(w, r, "conversation", page{Title: "conversation " + id, Nav: "conversations", Data: d})
}

// current is the units of stage for one conversation that belong to the
// stage's current plan: units of an earlier version are left out, as the
// report and the exports leave them out.
func current(ctx context.Context, l *ledger.Ledger, plans map[string][]ledger.Variant, stage, id string) ([]ledger.Unit, error) {
	vs := plans[stage]
	if len(vs) == 0 {
		return nil, nil
	}
	units, err := l.ConversationUnits(ctx, stage, id, 0)
	if err != nil {
		return nil, err
	}
	out := units[:0]
	for _, u := range units {
		if slices.Contains(vs, ledger.Variant{Name: u.Variant, Version: u.Version}) {
			out = append(out, u)
		}
	}
	return out, nil
}

func (h *Handler) conversation(ctx context.Context, s ledger.Stored, focus int, want []string) (convData, error) {
	c := s.Conv
	d := convData{ID: c.ID, Source: c.Source.String(), Origin: s.Origin, Language: c.Language, System: c.System, Seq: s.Seq, UserTurns: c.UserTurns(), Focus: focus}
	if len(c.Meta) > 0 {
		d.Meta = indentJSON(c.Meta)
	}
	if s.Origin == measure.Origin {
		d.Stitched = true
	}
	plans, err := h.l.Plans(ctx)
	if err != nil {
		return d, err
	}
	turns := c.Turns()
	byTurn := map[int]*turnView{}
	replyTurn := map[int]int{} // message index of a_t → t
	for _, tr := range turns {
		tv := turnView{Index: tr.Index, Focus: tr.Index == focus, User: msgView{Index: tr.User, Role: string(c.Messages[tr.User].Role), Text: c.Messages[tr.User].Content}}
		for i := tr.User + 1; i < tr.End; i++ {
			tv.Replies = append(tv.Replies, msgView{Index: i, Role: string(c.Messages[i].Role), Text: c.Messages[i].Content})
		}
		if tr.Reply >= 0 {
			replyTurn[tr.Reply] = tr.Index
		}
		d.Turns = append(d.Turns, tv)
	}
	for i := range d.Turns {
		byTurn[d.Turns[i].Index] = &d.Turns[i]
	}
	problem := func(u ledger.Unit, err error) {
		d.Problems = append(d.Problems, fmt.Sprintf("%s/%s turn %d: %v", u.Variant, u.Version, u.Turn, err))
	}
	// Every planned stage's units, once each; the failed ones are listed
	// apart with their errors.
	units := map[string][]ledger.Unit{}
	for _, stage := range sortedKeys(plans) {
		us, err := current(ctx, h.l, plans, stage, c.ID)
		if err != nil {
			return d, err
		}
		var done []ledger.Unit
		for _, u := range us {
			if u.Status == ledger.Failed {
				d.Failed = append(d.Failed, failedView{Stage: stage, Variant: u.Variant, Turn: u.Turn, Error: u.Error})
				continue
			}
			done = append(done, u)
		}
		units[stage] = done
	}
	for _, u := range units[classify.StageName] {
		lb, err := classify.Decode(u.Output)
		if err != nil {
			problem(u, err)
			continue
		}
		if tv := byTurn[u.Turn]; tv != nil {
			tv.Types = append(tv.Types, labelView{Variant: u.Variant, Label: lb})
		}
	}
	for _, u := range units[constraints.StageName] {
		rec, err := constraints.Decode(u.Output)
		if err != nil {
			problem(u, err)
			continue
		}
		if tv := byTurn[u.Turn]; tv != nil && tv.Constraints == nil {
			tv.Constraints = &constraintsView{New: rec.New, Registry: rec.Registry}
		}
	}
	for _, u := range units[pollution.StageName] {
		if strings.HasPrefix(u.Variant, pollution.ResponsesVariant("")) {
			continue // labels of generated replies: shown with the answers
		}
		lb, err := pollution.Decode(u.Output)
		if err != nil {
			problem(u, err)
			continue
		}
		tv := byTurn[u.Turn]
		if tv == nil {
			continue
		}
		tv.Pollution = append(tv.Pollution, lb)
		if !lb.Present {
			continue
		}
		for k := range tv.Replies {
			if tv.Replies[k].Role == string(conv.Assistant) {
				tv.Replies[k].Polluted = &lb
				break
			}
		}
		for _, src := range lb.Sources {
			back, err := strconv.Atoi(strings.TrimSuffix(src, "a"))
			if err != nil || back <= 0 {
				continue
			}
			if st := byTurn[u.Turn-back]; st != nil {
				for k := range st.Replies {
					if st.Replies[k].Role == string(conv.Assistant) {
						st.Replies[k].SourceOf = append(st.Replies[k].SourceOf, u.Turn)
						break
					}
				}
			}
		}
	}
	// The contexts, through the reader 'ac3 inspect' uses.
	ctxs, _, err := curate.CurrentContexts(ctx, h.l, c.ID, 0, nil)
	if err != nil {
		return d, err
	}
	var names []string
	for _, x := range ctxs {
		if !slices.Contains(names, x.Strategy) {
			names = append(names, x.Strategy)
		}
	}
	sel := selected(names, want)
	d.Selected = sel
	for _, n := range names {
		d.Strategies = append(d.Strategies, strategyChoice{Name: n, Shown: slices.Contains(sel, n), Toggle: toggleLink(c.ID, focus, sel, n)})
	}
	for _, x := range ctxs {
		if !slices.Contains(sel, x.Strategy) {
			continue
		}
		// A context that does not fit its conversation would index past
		// its messages: it is reported, not drawn.
		if err := curated.Validate(c, x.Parts); err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("curate/%s turn %d: %v", x.Strategy, x.Turn, err))
			continue
		}
		if tv := byTurn[x.Turn]; tv != nil {
			tv.Contexts = append(tv.Contexts, contextView(c, turns, x))
		}
	}
	for i := range d.Turns {
		slices.SortStableFunc(d.Turns[i].Contexts, func(a, b ctxView) int {
			return slices.Index(sel, a.Strategy) - slices.Index(sel, b.Strategy)
		})
	}
	for _, u := range units[respond.StageName] {
		o, err := respond.Decode(u.Output)
		if err != nil {
			problem(u, err)
			continue
		}
		if tv := byTurn[u.Turn]; tv != nil {
			tv.Answers = append(tv.Answers, answerView{Variant: u.Variant, Output: o})
		}
	}
	for _, u := range units[judge.StageName] {
		o, err := judge.Decode(u.Output)
		if err != nil {
			problem(u, err)
			continue
		}
		if tv := byTurn[u.Turn]; tv != nil {
			tv.Verdicts = append(tv.Verdicts, verdictView{Variant: u.Variant, Output: o, Dims: judge.Dimensions()})
		}
	}
	for _, u := range units[replay.StageName] {
		o, err := replay.Decode(u.Output)
		if err != nil {
			problem(u, err)
			continue
		}
		if tv := byTurn[u.Turn]; tv != nil {
			tv.Grades = append(tv.Grades, gradeView{Variant: u.Variant, Output: o})
		}
	}
	for _, u := range units[simulate.StageName] {
		t, err := simulate.Decode(u.Output)
		if err != nil {
			problem(u, err)
			continue
		}
		d.LiC = append(d.LiC, licView{Variant: u.Variant, Trajectory: t})
	}
	for _, u := range units[measure.StageName] {
		o, err := measure.Decode(u.Output)
		if err != nil {
			problem(u, err)
			continue
		}
		d.CompInt = append(d.CompInt, compintView{Variant: u.Variant, Output: o})
	}
	if s.Parent > 0 {
		// The conversation it was derived from, by seq: a page of one.
		got, err := h.l.BrowsePage(ctx, ledger.Browse{}, s.Parent-1, s.Parent, 1)
		if err != nil {
			return d, err
		}
		if len(got) == 1 {
			d.ParentLink = convLink(got[0].ID, 0)
		} else {
			d.Problems = append(d.Problems, fmt.Sprintf("derived from conversation seq %d, which the run file does not hold", s.Parent))
		}
	}
	return d, nil
}

// selected is the strategies to show side by side: those asked for that
// were curated, else the first two curated.
func selected(names, want []string) []string {
	var out []string
	for _, w := range want {
		if slices.Contains(names, w) {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		out = names[:min(2, len(names))]
	}
	return out
}

func toggleLink(id string, focus int, sel []string, name string) string {
	next := slices.Clone(sel)
	if i := slices.Index(next, name); i >= 0 {
		next = slices.Delete(next, i, i+1)
	} else {
		next = append(next, name)
	}
	v := url.Values{}
	if focus > 0 {
		v.Set("turn", strconv.Itoa(focus))
	}
	if len(next) > 0 {
		v.Set("strategies", strings.Join(next, ","))
	}
	u := "/conversation/" + url.PathEscape(id)
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	if focus > 0 {
		u += "#turn-" + strconv.Itoa(focus)
	}
	return u
}

// contextView lays out one curated context: each message with where it
// came from, and what the strategy left out of the conversation so far.
func contextView(c *conv.Conversation, turns []conv.Turn, x curated.Context) ctxView {
	v := ctxView{Strategy: x.Strategy, Tokens: x.Tokens, Messages: x.Messages, Info: x.Info, HasInfo: !x.Info.IsZero()}
	v.HasIssues = x.Info.Analyzed && x.Info.Analysis.HasIssues()
	used := map[int]bool{}
	curated.ForEachMessage(c, x.Parts, func(role conv.Role, group []curated.Part) {
		row := ctxRow{Role: string(role), Text: curated.GroupContent(c, group)}
		var origins []string
		kinds := map[string]bool{}
		for _, p := range group {
			switch {
			case p.Ref == curated.RefSystem:
				origins = append(origins, "system")
				kinds["kept"] = true
			case p.Ref == curated.RefText:
				origins = append(origins, "inserted")
				kinds["added"] = true
			case p.Fill > 0:
				origins = append(origins, fmt.Sprintf("filler for #%d", p.Ref+1))
				kinds["replaced"] = true
			default:
				origins = append(origins, fmt.Sprintf("#%d", p.Ref+1))
				kinds["kept"] = true
				used[p.Ref] = true
			}
		}
		row.Origin = strings.Join(origins, " + ")
		switch {
		case len(group) > 1:
			row.Kind = "joined"
		case kinds["added"]:
			row.Kind = "added"
			v.Added++
		case kinds["replaced"]:
			row.Kind = "replaced"
			v.Replaced++
		default:
			row.Kind = "kept"
		}
		v.Rows = append(v.Rows, row)
	})
	if x.Turn >= 1 && x.Turn <= len(turns) {
		for i := 0; i <= turns[x.Turn-1].User; i++ {
			if !used[i] {
				v.Dropped = append(v.Dropped, i+1)
			}
		}
	}
	return v
}

func indentJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
