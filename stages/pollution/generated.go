package pollution

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/respond"
)

// responsesPrefix starts the name of every variant that reviews generated
// replies: "responses:fc" reviews what respond variant "fc" wrote.
const responsesPrefix = "responses:"

// OriginResponses is the Origin family of generated replies; an Input's
// Origin is the respond variant itself ("fc", "fc@big").
const OriginResponses = "responses"

// ResponsesVariant is the pollution variant that reviews the replies of
// respond variant rv (a strategy, or strategy@label).
func ResponsesVariant(rv string) string { return responsesPrefix + rv }

// RespondVariant returns the respond variant a pollution variant reviews,
// and false for a variant that reviews the dataset's own replies.
func RespondVariant(variant string) (string, bool) {
	rv, ok := strings.CutPrefix(variant, responsesPrefix)
	if !ok || rv == "" {
		return "", false
	}
	return rv, true
}

// UnitReader reads the stored units of an earlier stage for one
// conversation (turn 0: every turn); *ledger.Ledger satisfies it.
type UnitReader interface {
	ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
}

// TaskCounter says how far a stage got in the run; *ledger.Ledger
// satisfies it.
type TaskCounter interface {
	CountConversations(ctx context.Context) (int64, error)
	TaskCounts(ctx context.Context, stage string, v ledger.Variant) (done, failed int64, err error)
}

// ResponseOptions configure the review of the replies respond generated.
//
// What the annotator sees: the conversation's own history C_t (system
// message, u_1, a_1, …, u_t, with the dataset's assistant turns), then the
// generated reply to turn t in place of a_t; the prompt is the one dataset
// replies get, and nothing in it names the strategy. The history is the
// original one, not the strategy's curated context, because the earlier
// assistant turns are what can pollute a reply: a strategy that hides them
// should show it by producing clean replies, and judged against its own
// context (only u_t, say) a reply would look clean by construction. Every
// strategy's reply to a turn is thus judged against the same history, so
// rates are comparable and pairs of strategies on one turn differ only in
// the reply. Only the answer text is reviewed, as the judge reads it;
// reasoning traces that respond keeps apart are not shown.
type ResponseOptions struct {
	// Units reads respond's units (the run's ledger).
	Units UnitReader
	// Strategies are the respond variants whose replies to review ("fc",
	// "ao", "fc@big"); empty reviews every variant in RespondVersions.
	Strategies []string
	// RespondVersions gives, per respond variant, the version respond
	// planned in this run (ledger plans of the respond stage). Only units
	// of that version are reviewed; it also decides which turns respond
	// answered, so a turn one strategy answered and another did not is
	// reported for the other as a failed unit rather than left out.
	RespondVersions map[string]string
	// Samples is how many samples of each reply are reviewed (sample
	// indexes 0 … Samples-1); 0 reviews every sample respond drew.
	Samples int
}

// strategies returns the respond variants to review.
func (r *ResponseOptions) strategies() []string {
	if len(r.Strategies) > 0 {
		return r.Strategies
	}
	out := make([]string, 0, len(r.RespondVersions))
	for v := range r.RespondVersions {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// variants returns one variant per respond variant reviewed. Its version
// holds the annotator's (ann), respond's version and the samples setting,
// so re-running respond differently makes the review pending again.
func (r *ResponseOptions) variants(ann string) ([]pipeline.Variant, error) {
	if r.Units == nil {
		return nil, errors.New("reviewing generated replies needs the run's units to read them from")
	}
	if r.Samples < 0 {
		return nil, fmt.Errorf("samples %d: want 0 (all) or more", r.Samples)
	}
	sts := r.strategies()
	if len(sts) == 0 {
		return nil, errors.New("respond has generated nothing in this run: run respond before reviewing its replies")
	}
	samples := "all"
	if r.Samples > 0 {
		samples = strconv.Itoa(r.Samples)
	}
	seen := map[string]bool{}
	var out []pipeline.Variant
	for _, st := range sts {
		ver, ok := r.RespondVersions[st]
		if !ok {
			return nil, fmt.Errorf("respond variant %q has no replies in this run (respond has %s); run respond with it first", st, strings.Join(r.planned(), ", "))
		}
		if seen[st] {
			return nil, fmt.Errorf("respond variant %q is listed twice", st)
		}
		seen[st] = true
		out = append(out, pipeline.Variant{
			Name:    ResponsesVariant(st),
			Version: fmt.Sprintf("%s;on=%s;respond=%s;samples=%s", ann, OriginResponses, ver, samples),
		})
	}
	return out, nil
}

// planned lists respond's variants, for messages.
func (r *ResponseOptions) planned() []string {
	out := make([]string, 0, len(r.RespondVersions))
	for v := range r.RespondVersions {
		out = append(out, v)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// Ready returns nil when respond has recorded every conversation of the run
// for each variant to review, and otherwise an error naming the variants
// and how many conversations they lack. Reviewing earlier would record
// those conversations as having no generated reply, and a finished review
// is not redone when respond catches up, so the caller should not start
// the review until Ready is nil.
func (r *ResponseOptions) Ready(ctx context.Context, tc TaskCounter) error {
	n, err := tc.CountConversations(ctx)
	if err != nil {
		return fmt.Errorf("checking respond is finished: %w", err)
	}
	var lacking []string
	for _, st := range r.strategies() {
		ver, ok := r.RespondVersions[st]
		if !ok {
			lacking = append(lacking, fmt.Sprintf("%s (never planned)", st))
			continue
		}
		done, failed, err := tc.TaskCounts(ctx, respond.StageName, ledger.Variant{Name: st, Version: ver})
		if err != nil {
			return fmt.Errorf("checking respond is finished: %w", err)
		}
		if left := n - done - failed; left > 0 {
			lacking = append(lacking, fmt.Sprintf("%s (%d of %d conversations)", st, left, n))
		}
	}
	if len(lacking) > 0 {
		return fmt.Errorf("respond has not finished, so there is nothing yet to review for: %s; finish respond first", strings.Join(lacking, ", "))
	}
	return nil
}

// Generated is the stored output of a unit that reviewed generated
// replies: the respond unit of one (conversation, turn, respond variant)
// and a label per sample reviewed.
type Generated struct {
	Respond  string `json:"respond"`  // respond variant: strategy, or strategy@label
	Strategy string `json:"strategy"` // curate strategy the reply was generated from
	Model    string `json:"model"`    // the respondent model, as respond recorded it
	// Unavailable says why there was no reply to review (respond's unit
	// missing, failed or of another version); the unit is then failed and
	// Samples is empty. Reports count these apart from review failures.
	Unavailable string        `json:"unavailable,omitempty"`
	Samples     []SampleLabel `json:"samples"`
}

// SampleLabel is the review of one sample: its Label, or Error when it
// could not be reviewed.
type SampleLabel struct {
	Index int    `json:"index"` // respond's sample index
	Label *Label `json:"label,omitempty"`
	Error string `json:"error,omitempty"`
}

// Encode returns the stored form of g.
func (g Generated) Encode() ([]byte, error) {
	if g.Samples == nil {
		g.Samples = []SampleLabel{}
	}
	for i, s := range g.Samples {
		if s.Label != nil && s.Label.Sources == nil {
			l := *s.Label
			l.Sources = []string{}
			g.Samples[i].Label = &l
		}
	}
	return json.Marshal(g)
}

// DecodeGenerated reads the stored output of a unit that reviewed
// generated replies (a "responses:" variant).
func DecodeGenerated(b []byte) (Generated, error) {
	var g struct {
		Generated
		Samples *[]SampleLabel `json:"samples"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return Generated{}, fmt.Errorf("decoding pollution review of generated replies: %w", err)
	}
	if g.Samples == nil {
		return Generated{}, errors.New("decoding pollution review of generated replies: no samples field (a dataset label? read it with Decode)")
	}
	out := g.Generated
	out.Samples = *g.Samples
	return out, nil
}

// genUnit collects one unit on generated replies while its samples are
// reviewed.
type genUnit struct {
	turn     int
	out      Generated
	inputs   []Input // per slot of out.Samples; Reply "" when not reviewed
	raw      string  // the first failed review's raw answer
	tokens   int64
	attempts int
}

// unavailable returns a unit that has nothing to review, for reason.
func unavailable(turn int, rv, reason string) *genUnit {
	return &genUnit{turn: turn, out: Generated{Respond: rv, Unavailable: reason}}
}

// fill records the review of slot: u is the review's unit, l its label
// when u is done.
func (g *genUnit) fill(slot int, u pipeline.Unit, l Label) {
	g.tokens += u.Tokens
	g.attempts = max(g.attempts, u.Attempts)
	if u.Failed {
		g.out.Samples[slot].Error = u.Error
		if g.raw == "" {
			g.raw = u.Raw
		}
		return
	}
	g.out.Samples[slot].Label = &l
}

// unit returns the stored unit: failed when there was nothing to review or
// any sample's review failed, with the first reason; the labels of the
// other samples are kept in its output either way.
func (g *genUnit) unit() (pipeline.Unit, error) {
	b, err := g.out.Encode()
	if err != nil {
		return pipeline.Unit{}, fmt.Errorf("encoding review of turn %d: %w", g.turn, err)
	}
	u := pipeline.Unit{Turn: g.turn, Attempts: max(1, g.attempts), Output: b, Tokens: g.tokens, Raw: g.raw}
	if g.out.Unavailable != "" {
		u.Failed, u.Error = true, g.out.Unavailable
		return u, nil
	}
	for _, s := range g.out.Samples {
		if s.Error != "" {
			u.Failed, u.Error = true, fmt.Sprintf("sample %d: %s", s.Index, s.Error)
			break
		}
	}
	return u, nil
}

// generated reads respond's units of c and returns, per respond variant
// reviewed, one genUnit per turn to review, in turn order. The turns are
// those from DefaultFrom on that any respond variant of the plan answered
// (done or failed) at its planned version: a reviewed variant that lacks
// one of them gets a unit that says so instead of silently fewer turns.
func (s *Stage) generated(ctx context.Context, c *conv.Conversation) (map[string][]*genUnit, error) {
	r := s.opts.Responses
	stored, err := r.Units.ConversationUnits(ctx, respond.StageName, c.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("reading generated replies of %s: %w", c.ID, err)
	}
	current := map[string]map[int]ledger.Unit{} // respond variant → turn → unit of the planned version
	stale := map[string]map[int]bool{}          // respond variant → turns answered only at another version
	var turns []int
	for _, u := range stored {
		want, ok := r.RespondVersions[u.Variant]
		if !ok || u.Turn < DefaultFrom {
			continue
		}
		if u.Version != want {
			if stale[u.Variant] == nil {
				stale[u.Variant] = map[int]bool{}
			}
			stale[u.Variant][u.Turn] = true
			continue
		}
		if current[u.Variant] == nil {
			current[u.Variant] = map[int]ledger.Unit{}
		}
		current[u.Variant][u.Turn] = u
		if !slices.Contains(turns, u.Turn) {
			turns = append(turns, u.Turn)
		}
	}
	slices.Sort(turns)
	nturns := len(c.Turns())
	out := map[string][]*genUnit{}
	for _, rv := range r.strategies() {
		for _, t := range turns {
			out[rv] = append(out[rv], s.prepare(c, rv, t, nturns, current[rv], stale[rv][t]))
		}
	}
	return out, nil
}

// prepare builds the unit of respond variant rv at turn t from its respond
// unit among cur (units of the planned version by turn); wasStale says
// respond answered t only at another version.
func (s *Stage) prepare(c *conv.Conversation, rv string, t, nturns int, cur map[int]ledger.Unit, wasStale bool) *genUnit {
	u, ok := cur[t]
	switch {
	case t > nturns:
		return unavailable(t, rv, fmt.Sprintf("respond answered turn %d, which the conversation does not have", t))
	case !ok && wasStale:
		return unavailable(t, rv, fmt.Sprintf("respond's reply of %q to turn %d is from an earlier respond configuration; run respond again", rv, t))
	case !ok:
		return unavailable(t, rv, fmt.Sprintf("respond has no reply of %q to turn %d, though other strategies answered it (its curated context is missing or failed)", rv, t))
	case u.Status != ledger.Done:
		return unavailable(t, rv, fmt.Sprintf("the reply of %q to turn %d was not generated: %s", rv, t, cmp.Or(u.Error, "respond unit failed")))
	}
	o, err := respond.Decode(u.Output)
	if err != nil {
		return unavailable(t, rv, fmt.Sprintf("reading respond's reply to turn %d: %v", t, err))
	}
	g := &genUnit{turn: t, out: Generated{Respond: rv, Strategy: o.Strategy, Model: o.Model}}
	want := s.opts.Responses.Samples
	for _, smp := range o.Samples {
		if want > 0 && smp.Index >= want {
			continue
		}
		sl := SampleLabel{Index: smp.Index}
		in := Input{Conv: c, Turn: t, Reply: smp.Text, Origin: rv}
		if strings.TrimSpace(smp.Text) == "" {
			sl.Error = "the generated reply is empty"
			in.Reply = ""
		}
		g.out.Samples = append(g.out.Samples, sl)
		g.inputs = append(g.inputs, in)
	}
	if len(g.out.Samples) == 0 {
		return unavailable(t, rv, fmt.Sprintf("respond's unit for turn %d holds no sample to review", t))
	}
	return g
}
