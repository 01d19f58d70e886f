package view

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ac3/ac3/judge"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/classify"
)

// count is a number on the run page with the list behind it ("" when the
// items are not kept, as for dropped conversations).
type count struct {
	Label string
	N     int64
	Link  string
}

// largeRun is the size from which the run page leaves out the turn-type
// shares unless asked (see runPage).
const largeRun = 20_000

type runData struct {
	Status    run.Status
	Kept      count
	Origins   []count
	Dropped   []count
	Quarant   []count
	Languages []count
	TurnTypes []turnTypeRow
	Stages    []stageRow
	Spend     string
	Updated   string
	Took      string
	// AskTurnTypes: the shares were left out (a large run); the page links
	// to the version with them.
	AskTurnTypes bool
}

type turnTypeRow struct {
	Variant string
	Counts  []count
	Failed  int
}

type stageRow struct {
	ledger.StageStatus
	DoneLink, FailedLink, PendingLink string
}

func (h *Handler) runPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	start := time.Now()
	// The turn-type shares read every classify unit, which on a large
	// run takes seconds: there they are counted when asked for.
	var st run.Status
	var err error
	st.Status, err = h.l.Status(ctx)
	if err == nil && (st.Conversations <= largeRun || r.URL.Query().Get("turntypes") != "") {
		st.TurnTypes, err = run.RunTurnTypes(ctx, h.l)
	}
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	d := runData{Status: st, AskTurnTypes: st.TurnTypes == nil && len(plansOf(st.Stages, classify.StageName)) > 0, Spend: fmt.Sprintf("$%.4f", st.SpendUSD), Updated: time.Now().Format("15:04:05")}
	d.Kept = count{"kept conversations", st.Conversations, "/conversations"}
	for _, o := range slices.Sorted(maps.Keys(st.Origins)) {
		d.Origins = append(d.Origins, count{o, st.Origins[o], "/conversations?" + url.Values{"origin": {o}}.Encode()})
	}
	for _, k := range byCount(st.Dropped) {
		d.Dropped = append(d.Dropped, count{k, st.Dropped[k], ""})
	}
	for _, k := range byCount(st.Quarantined) {
		d.Quarant = append(d.Quarant, count{k, st.Quarantined[k], "/quarantine?" + url.Values{"reason": {k}}.Encode()})
	}
	for _, lc := range st.Languages {
		lang := lc.Language
		label := cmp.Or(lang, "(none)")
		link := ""
		if lang != "" { // a list filtered on "no language" is not offered
			link = "/conversations?" + url.Values{"lang": {lang}}.Encode()
		}
		d.Languages = append(d.Languages, count{label, lc.Conversations, link})
	}
	for _, tt := range st.TurnTypes {
		row := turnTypeRow{Variant: tt.Variant, Failed: tt.Failed}
		for _, s := range tt.Shares {
			row.Counts = append(row.Counts, count{s.Type, int64(s.Count), "/conversations?" + url.Values{"type": {s.Type}}.Encode()})
		}
		d.TurnTypes = append(d.TurnTypes, row)
	}
	for _, s := range st.Stages {
		row := stageRow{StageStatus: s}
		row.DoneLink = "/conversations?" + url.Values{"done": {s.Stage}}.Encode()
		row.FailedLink = "/conversations?" + url.Values{"failed": {s.Stage}}.Encode()
		row.PendingLink = "/conversations?" + url.Values{"pending": {s.Stage}, "variant": {s.Variant}}.Encode()
		d.Stages = append(d.Stages, row)
	}
	// Reading the status costs about what 'ac3 status' does, which grows
	// with the run: the page waits several times that before reloading, so
	// a large run is not read back to back.
	took := time.Since(start)
	d.Took = took.Round(10 * time.Millisecond).String()
	h.render(w, r, "run", page{Title: "run", Nav: "run", Refresh: max(5, int(4*took.Seconds())), Data: d})
}

// byCount is m's keys, largest count first.
func byCount(m map[string]int64) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	return keys
}

type listRow struct {
	Seq       int64
	ID        string
	Link      string
	Input     string
	Language  string
	UserTurns int
	Origin    string
	First     string // the first user turn, cut short
}

type listData struct {
	Filter  filter
	Rows    []listRow
	Next    string // link to the next page, "" at the end
	Looked  int64  // the last seq examined, when the page ran out of time
	LastSeq int64
	First   bool // no cursor: the first page
	Elapsed string
	Options filterOptions
}

// filterOptions are the choices the filter bar offers, read from the
// run's plans and counts (cheap: the status indexes), never from a scan.
type filterOptions struct {
	Sources   []string
	Languages []string
	Stages    []string
	Pairs     []string
	Dims      []string
}

func (h *Handler) listPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	start := time.Now()
	f, err := parseFilter(ctx, h.l, r.URL.Query())
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	after, err := cursor(r.URL.Query().Get("after"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	rows, next, last, err := h.find(ctx, f, after, h.pageSize)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	d := listData{Filter: f, LastSeq: last, First: after == 0}
	for _, s := range rows {
		row := listRow{Seq: s.Seq, ID: s.ID, Link: convLink(s.ID, 0), Input: s.Input, Language: s.Language, UserTurns: s.UserTurns, Origin: s.Origin}
		if s.Conv != nil {
			if m, ok := s.Conv.UserTurn(1); ok {
				row.First = cut(m.Content, 160)
			}
		}
		d.Rows = append(d.Rows, row)
	}
	if next > 0 {
		v := cloneValues(f.Values)
		v.Set("after", strconv.FormatInt(next, 10))
		d.Next = "/conversations?" + v.Encode()
		if len(rows) < h.pageSize {
			d.Looked = next
		}
	}
	if d.Options, err = h.options(ctx); err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	d.Elapsed = time.Since(start).Round(time.Millisecond).String()
	h.render(w, r, "conversations", page{Title: "conversations", Nav: "conversations", Data: d})
}

func cursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("after: %q is not a position in the run", s)
	}
	return n, nil
}

// find reads the page of conversations f selects after seq after: up to
// limit rows, and where the next page starts (0: nothing after). It reads
// the run forward in windows of seqs, each twice as wide as the last, and
// stops when the page is full, the run ends or the time budget is spent;
// when the budget ran out, next is the last seq it examined. A text search
// decodes every candidate, so its windows stay small and memory flat.
func (h *Handler) find(ctx context.Context, f filter, after int64, limit int) (rows []ledger.Listed, next, last int64, err error) {
	last, err = h.l.LastSeq(ctx)
	if err != nil || after >= last {
		return nil, 0, last, err
	}
	win := newWindows(h.budget, 2048, 1<<18)
	if f.Text != "" {
		win = newWindows(h.budget, 256, 256)
	}
	pos := after
	for pos < last {
		upto := win.next(pos, last)
		want := limit - len(rows)
		if f.Text != "" {
			want = int(upto - pos)
		}
		got, err := h.l.BrowsePage(ctx, f.Browse, pos, upto, want)
		if err != nil {
			return nil, 0, last, err
		}
		for _, s := range got {
			if f.Text != "" && !userTurnsContain(s.Conv, f.Text) {
				continue
			}
			rows = append(rows, s)
			if len(rows) == limit {
				if s.Seq >= last {
					return rows, 0, last, nil
				}
				return rows, s.Seq, last, nil
			}
		}
		pos = upto
		if !win.more() {
			break
		}
	}
	if pos >= last {
		return rows, 0, last, nil
	}
	return rows, pos, last, nil
}

func userTurnsContain(c *conv.Conversation, lowered string) bool {
	if c == nil {
		return false
	}
	for _, m := range c.Messages {
		if m.Role == conv.User && strings.Contains(strings.ToLower(m.Content), lowered) {
			return true
		}
	}
	return false
}

func (h *Handler) options(ctx context.Context) (filterOptions, error) {
	var o filterOptions
	ins, err := h.l.Inputs(ctx)
	if err != nil {
		return o, err
	}
	for _, in := range ins {
		o.Sources = append(o.Sources, in.Path)
	}
	langs, err := h.l.LanguageNames(ctx)
	if err != nil {
		return o, err
	}
	for _, lang := range langs {
		if lang != "" {
			o.Languages = append(o.Languages, lang)
		}
	}
	plans, err := h.l.Plans(ctx)
	if err != nil {
		return o, err
	}
	o.Stages = slices.Sorted(maps.Keys(plans))
	seen := map[string]bool{}
	for _, v := range plans[judge.StageName] {
		p, _, _ := strings.Cut(v.Name, "/")
		if !seen[p] {
			seen[p] = true
			o.Pairs = append(o.Pairs, p)
		}
	}
	o.Dims = judge.Dimensions()
	return o, nil
}

// convLink is the URL of a conversation, at user turn turn when > 0.
func convLink(id string, turn int) string {
	u := "/conversation/" + url.PathEscape(id)
	if turn > 0 {
		u += "?turn=" + strconv.Itoa(turn) + "#turn-" + strconv.Itoa(turn)
	}
	return u
}

// cut shortens s to at most n runes on one line.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

type quarantineData struct {
	Reason  string
	Rows    []ledger.Quarantined
	Next    string
	Reasons []count
}

func (h *Handler) quarantinePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	after, err := cursor(q.Get("after"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	reason := q.Get("reason")
	rows, err := h.l.QuarantinePage(ctx, reason, after, h.pageSize)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	d := quarantineData{Reason: reason, Rows: rows}
	if len(rows) == h.pageSize {
		v := url.Values{"after": {strconv.FormatInt(rows[len(rows)-1].ID, 10)}}
		if reason != "" {
			v.Set("reason", reason)
		}
		d.Next = "/quarantine?" + v.Encode()
	}
	st, err := h.l.Status(ctx)
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	for _, k := range byCount(st.Quarantined) {
		d.Reasons = append(d.Reasons, count{k, st.Quarantined[k], "/quarantine?" + url.Values{"reason": {k}}.Encode()})
	}
	h.render(w, r, "quarantine", page{Title: "quarantine", Nav: "quarantine", Data: d})
}

// plansOf is the stage rows of one stage.
func plansOf(stages []ledger.StageStatus, stage string) []ledger.StageStatus {
	var out []ledger.StageStatus
	for _, s := range stages {
		if s.Stage == stage {
			out = append(out, s)
		}
	}
	return out
}
