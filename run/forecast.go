package run

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/compint/measure"
)

// Forecast is a dry run's prediction of what a plan would do: per stage,
// the tasks still to do and the model calls, tokens and dollars they would
// take. It is computed without calling a model or changing anything.
type Forecast struct {
	DB        string          `json:"run"`
	RunExists bool            `json:"run_exists"`
	Inputs    []InputForecast `json:"inputs,omitempty"`
	// Conversations counts the conversations the forecast went through: the
	// run's, and those of input files not ingested yet, read through the
	// plan's filters.
	Conversations int64           `json:"conversations"`
	Stages        []StageForecast `json:"stages"`
	Exports       []Export        `json:"exports,omitempty"`
	TotalCalls    int64           `json:"total_calls"`
	TotalCostUSD  float64         `json:"total_cost_usd"`
	// TotalInputTokens and TotalCachedTokens sum the stages' input tokens
	// and the part of them a provider's prompt cache is expected to serve.
	TotalInputTokens  int64 `json:"total_input_tokens"`
	TotalCachedTokens int64 `json:"total_cached_tokens"`
	// BatchRounds estimates the rounds of batches (submit, wait for the
	// endpoint, import) the run would wait for, over the stages whose
	// roles are in batch mode: stages that share their rounds
	// (classify, constraints and pollution, which read none of each
	// other's answers) count as the longest of them, the others add up.
	// An estimate: it assumes every batch answers every request and every
	// answer parses (a request left unanswered, or an answer asked again,
	// costs a round more), and it counts a stage from its structure, not
	// from a run (see StageForecast.BatchRounds).
	BatchRounds int64 `json:"batch_rounds"`
	// Notes say what the forecast assumed and what the run will skip.
	Notes []string `json:"notes,omitempty"`
	// StopsAt names the first step the run would stop at with an error (an
	// input file missing, a setting it cannot use); "" when the run would
	// go through.
	StopsAt string `json:"stops_at,omitempty"`
	// Refused says why the run would refuse to start, before any step (an
	// endpoint's key variable that is unset); "" when it would start.
	Refused string `json:"refused,omitempty"`
}

// wouldStop starts a stage's Skipped when the run would end there with an
// error rather than skip the stage and go on.
const wouldStop = "the run would stop here: "

// Err is what a dry run ends with: nil, unless the run would refuse to
// start or would stop.
func (f Forecast) Err() error {
	if f.Refused != "" {
		return fmt.Errorf("%s; the run would refuse to start (the plan above is what it would do with the key set); nothing was changed", f.Refused)
	}
	if f.StopsAt == "" {
		return nil
	}
	return fmt.Errorf("the run would stop at %s (see the plan above); nothing was changed", f.StopsAt)
}

// stopAt records that the run would stop at step with err, unless an
// earlier step stops it first.
func (e *forecaster) stopAt(step string, err error) {
	if e.fc.StopsAt == "" {
		e.fc.StopsAt, e.stopErr = step, err
	}
}

// InputForecast is one input file of the plan.
type InputForecast struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	State string `json:"state"` // new, partly read, already ingested, missing
}

// StageForecast is one stage of the plan.
type StageForecast struct {
	Stage string `json:"stage"`
	Label string `json:"label"`
	// Skipped says why the run would not run the stage ("" when it would).
	Skipped      string `json:"skipped,omitempty"`
	PendingTasks int64  `json:"pending_tasks"` // conversation × variant
	DoneTasks    int64  `json:"done_tasks"`    // recorded by earlier runs (done or failed)
	Calls        int64  `json:"calls"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	// CachedTokens is the part of InputTokens a provider's prompt cache is
	// expected to serve: the prefixes calls of one conversation share (as
	// the stage reports them, see pipeline.Call.Prefix), from 1,024 tokens
	// in steps of 128, as OpenAI's cache bills them. It is priced at the
	// model's cached price; a stage that reports no prefix counts none.
	CachedTokens int64 `json:"cached_tokens"`
	// OutputTokensPerCall is the answer length assumed per call: the
	// stage's expectation, capped at the role's max_tokens.
	OutputTokensPerCall int64    `json:"output_tokens_per_call"`
	CostUSD             float64  `json:"cost_usd"`
	Roles               []string `json:"roles,omitempty"`
	// Unpriced: a role's model has no price, so the cost counts it as free.
	Unpriced bool `json:"unpriced,omitempty"`
	// BatchRounds estimates the rounds of batches the stage would wait for
	// (0 when none of its calls goes through batches): the depth of its
	// calls' dependencies, as the stage says (see BatchRounder); else 1
	// for a stage whose calls are all known before any is answered, and
	// for one that asks a conversation's calls one after another (each
	// reads the answers before it), its most calls in one conversation.
	BatchRounds int64 `json:"batch_rounds"`

	stage pipeline.Stage
	lv    []ledger.Variant
	scope ledger.Scope // the conversations the stage runs over
	// shared: the stage shares its batch rounds with the other shared
	// stages (the annotation stages, which run as one group).
	shared bool
	// batchConvs counts the conversations with calls in batch mode, for a
	// BatchRounder.
	batchConvs int64
}

// emptyUnits is the unit store of a run that does not exist yet.
type emptyUnits struct{}

func (emptyUnits) ConversationUnits(context.Context, string, string, int) ([]ledger.Unit, error) {
	return nil, nil
}

// forecaster is one Estimate call.
type forecaster struct {
	plan    Plan
	l       *ledger.Ledger // nil when the run does not exist yet
	client  *llm.Client    // for prices; nil without an endpoint
	noModel error
	// stopErr is why the run would stop at fc.StopsAt.
	stopErr error
	counter *tokens.Counter
	notes   bytes.Buffer
	fc      Forecast
	ac3     bool // the curate stage runs a model-backed strategy
	// compint stitches the source conversations into CompInt instances as
	// the run would, when the run has not built them yet; nil otherwise.
	compint *compintSim
	// walkAll makes walk read every conversation even when nothing is
	// pending (for the test that checks the shortcut against the walk);
	// counted says walk took the shortcut.
	walkAll, counted bool
	// unread names the stages whose predictions no later stage reads.
	unread map[string]bool
}

// unread names the stages of a plan whose predictions no later stage
// reads. A later estimator that does not say what it reads is taken to
// read everything before it.
func unread(stages []StageForecast) map[string]bool {
	out := map[string]bool{}
	for i, sf := range stages {
		if sf.stage == nil {
			continue
		}
		out[sf.Stage] = true
		for _, later := range stages[i+1:] {
			if later.stage == nil {
				continue
			}
			pr, ok := later.stage.(pipeline.PredictionReader)
			if _, est := later.stage.(pipeline.Estimator); est && !ok || ok && slices.Contains(pr.ReadsPredictionsOf(), sf.Stage) {
				delete(out, sf.Stage)
				break
			}
		}
	}
	return out
}

// compintSim builds the CompInt instances a run would derive.
type compintSim struct {
	st *compint.Stitcher
	bd *compint.Builder
	// embed counts the embedding requests of topic stitching (nil for
	// sequential stitching): one text per source conversation.
	embed *embedSim
}

// embedSim forecasts topic stitching's embedding calls.
type embedSim struct {
	tok           *tokens.Counter
	maxTokens     int
	pool, seen    int // the embed_pool cap, and conversations offered so far
	texts, tokens int64
}

// Estimate forecasts plan without running it: it builds every stage as the
// run would (with the same skips: no endpoint, no upstream stage), then
// goes through the conversations one at a time — the run's, and those of
// input files not ingested yet, read through the same filters, never all
// held at once — and asks each stage (pipeline.Estimator) what it would
// call for the tasks not yet recorded. Requests the run would send once
// (identical contexts, identical answers) are counted once.
func Estimate(ctx context.Context, plan Plan) (Forecast, error) {
	fc, _, err := estimate(ctx, plan, false)
	return fc, err
}

// DryRun writes the forecast of plan on w, as text or (asJSON) indented
// JSON, notes first, and ends as the run would: a dry run is how a config
// is checked before a long run, so one the run would stop on must not pass.
func DryRun(ctx context.Context, w io.Writer, plan Plan, notes []string, asJSON bool) error {
	fc, err := Estimate(ctx, plan)
	if err != nil {
		return err
	}
	fc.Notes = append(notes, fc.Notes...)
	if asJSON {
		if err := WriteJSON(w, fc); err != nil {
			return err
		}
	} else {
		fc.WriteText(w, plan)
	}
	return fc.Err()
}

// WriteJSON writes v as indented JSON, what the commands' --json print.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// estimate is Estimate; walkAll turns the finished-run shortcut off, and
// counted reports whether it was taken.
func estimate(ctx context.Context, plan Plan, walkAll bool) (Forecast, bool, error) {
	e := &forecaster{walkAll: walkAll}
	fc, err := e.run(ctx, plan)
	return fc, e.counted, err
}

func (e *forecaster) run(ctx context.Context, plan Plan) (Forecast, error) {
	plan, shardNote := plan.forShard()
	e.plan = plan
	if shardNote != "" {
		e.fc.Notes = append(e.fc.Notes, shardNote)
	}
	e.fc.DB = plan.DB
	if _, err := os.Stat(plan.DB); err == nil {
		l, err := ledger.Open(ctx, plan.DB, ledger.Options{ReadOnly: true})
		if err != nil {
			return e.fc, err
		}
		defer l.Close()
		e.l, e.fc.RunExists = l, true
	}
	if err := plan.Model.checkBudget(); err != nil {
		return e.fc, err
	}
	if err := e.prepare(ctx); err != nil {
		return e.fc, err
	}
	if err := e.build(ctx); err != nil {
		return e.fc, err
	}
	e.unread = unread(e.fc.Stages)
	if err := e.walk(ctx); err != nil {
		return e.fc, err
	}
	e.finish()
	e.keys()
	return e.fc, nil
}

// keys says what the run would do about the endpoints' keys: refuse to
// start when a key variable is unset (as preflight does), and note the
// endpoints that are sent no key.
func (e *forecaster) keys() {
	if err := e.plan.checkKeys(); err != nil {
		e.fc.Refused = err.Error()
	}
	if o := e.plan.Model.Options; o != nil && e.plan.needsModel() {
		if names := o.Keyless(); len(names) > 0 {
			e.note("no API key is sent to endpoint %s: none is configured (a local server needs none; one that wants a key answers 401 and the run stops at its first call)", strings.Join(names, ", "))
		}
	}
}

// prepare builds the token counter and a client for the plan's models
// without the run's cache, records or budget (it only prices calls and
// builds stages); noModel is set when no endpoint is configured.
func (e *forecaster) prepare(ctx context.Context) error {
	enc := ""
	if e.plan.Curate != nil {
		enc = e.plan.Curate.Encoding
	}
	var err error
	if e.counter, err = (&Curate{Encoding: enc}).counter(); err != nil {
		return err
	}
	e.client, err = e.plan.Model.client(ctx, nil, e.counter, nil)
	if errors.Is(err, ErrNoEndpoint) {
		e.noModel, err = err, nil
	}
	return err
}

// build builds the plan's stages in run order. Each stage sees the plans
// the stages before it will have recorded by the time it runs.
func (e *forecaster) build(ctx context.Context) error {
	plans := map[string][]ledger.Variant{}
	if e.l != nil {
		var err error
		if plans, err = e.l.Plans(ctx); err != nil {
			return err
		}
	}
	var on ledger.Scope // the scope the next stage's config narrows it to
	add := func(label string, st pipeline.Stage, skipped string) {
		sf := StageForecast{Label: label, Skipped: skipped, stage: st}
		if st != nil {
			for _, line := range userPrompts(st) {
				fmt.Fprintf(&e.notes, "%s: %s\n", label, line)
			}
			sf.Stage = st.Name()
			sf.lv = toLedger(st.Variants())
			plans[st.Name()] = sf.lv
			scope, err := pipeline.StageScope(st, on)
			if err != nil {
				sf.Skipped, sf.stage = wouldStop+err.Error(), nil
				e.stopAt(sf.Stage, err)
			}
			sf.scope = scope
		} else {
			sf.Stage = strings.Fields(label)[0]
		}
		e.fc.Stages = append(e.fc.Stages, sf)
	}
	failed := func(label string, err error) {
		add(label, nil, wouldStop+err.Error())
		e.stopAt(strings.Fields(label)[0], err)
	}
	if a := e.plan.Annotate; a != nil {
		for _, p := range a.stages() {
			if p.model && e.client == nil {
				add(p.label, nil, e.noModel.Error())
				continue
			}
			st, err := p.build(e.client)
			if err != nil {
				return err
			}
			add(p.label, st, "")
			e.fc.Stages[len(e.fc.Stages)-1].shared = true
		}
	}
	var units interface {
		ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
	} = emptyUnits{}
	if e.l != nil {
		units = e.l
	}
	if c := e.plan.Curate; c != nil {
		var err error
		if on, err = ledger.Origins(c.On...); err != nil {
			return err
		}
		b, err := c.build(ctx, curateEnv{l: e.l, units: units, plans: plans, log: &e.notes, client: e.client, noModel: e.noModel})
		switch {
		case err != nil:
			failed("curate", err)
		case b.stage == nil:
			add("curate", nil, "no strategy left to run")
		default:
			add("curate", b.stage, "")
			on = ledger.AllOrigins
			e.ac3 = b.model
			if b.split.Excluded {
				fmt.Fprintf(&e.notes, "curate: the forecast counts the offline memory's learning conversations too (an upper bound)\n")
			}
			if b.online != nil {
				fmt.Fprintf(&e.notes, "curate: online memory %s: conversations are curated one at a time in ingest order; every turn from %d is analyzed, plus one reflection and one unify call per conversation\n", b.online.Chain().ID, b.online.Chain().From)
			}
		}
	}
	if a := e.plan.Respond; a != nil {
		if e.client == nil {
			add("respond", nil, e.noModel.Error())
		} else if st, err := a.build(e.client, units, plans, e.plan.Model); err != nil {
			failed("respond", err)
		} else {
			add("respond", st, "")
		}
	}
	if a := e.plan.Replies; a != nil {
		if e.client == nil {
			add(a.label(), nil, e.noModel.Error())
		} else if st, _, err := a.build(e.client, units, plans); err != nil {
			failed(a.label(), err)
		} else {
			add(a.label(), st, "")
		}
	}
	if a := e.plan.Judge; a != nil {
		if e.client == nil {
			add("judge", nil, e.noModel.Error())
		} else if st, err := a.build(e.client, units, plans, e.plan.Model, e.plan.Seed); err != nil {
			failed("judge", err)
		} else {
			add("judge", st, "")
		}
	}
	on = ledger.AllOrigins
	if c := e.plan.CompInt; c != nil {
		if err := e.buildCompInt(ctx, c, units, plans, add, failed); err != nil {
			return err
		}
	}
	e.fc.Exports = e.plan.Exports
	return nil
}

// buildCompInt adds the CompInt measurement stage, and when the run has no
// instances yet, sets up the stitching that predicts them.
func (e *forecaster) buildCompInt(ctx context.Context, c *CompInt, units measure.UnitReader, plans map[string][]ledger.Variant, add func(string, pipeline.Stage, string), failed func(string, error)) error {
	built := false
	if e.l != nil {
		ds, err := e.l.DerivedOrigins(ctx)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if d.Origin == measure.Origin {
				built = true
				if !d.Finished {
					e.note("compint: the run's instances are only partly built; those not built yet are not counted")
				}
			}
		}
	}
	if !built {
		st, bd, err := c.builders(uint64(e.plan.Seed))
		if err != nil {
			return err
		}
		e.compint = &compintSim{st: st, bd: bd}
		if m, err := c.stitchMethod(e.plan.Model); err != nil {
			return err
		} else if m == compint.StitchTopic {
			tok, err := tokens.New(cmp.Or(c.Encoding, tokens.DefaultEncoding))
			if err != nil {
				return err
			}
			e.compint.embed = &embedSim{tok: tok, maxTokens: cmp.Or(c.EmbedMaxTokens, compint.DefaultEmbedMaxTokens), pool: cmp.Or(c.EmbedPool, DefaultEmbedPool)}
			e.note("compint: topic stitching (the embedder role's embeddings, the paper's): the forecast stitches in input order, which gives as many contexts give or take one; the embedding calls (one text per source conversation, counted with our tokenizer) are the row \"compint embeddings\"")
		} else {
			e.note("compint: sequential stitching, conversations in input order (topic stitching needs the embedder role)")
		}
	}
	if e.client == nil {
		add("compint", nil, e.noModel.Error())
		return nil
	}
	st, _, err := c.build(e.client, units, plans, e.plan.Model, e.plan.Seed)
	if err != nil {
		failed("compint", err)
		return nil
	}
	add("compint", st, "")
	return nil
}

// source offers an ingested conversation to the CompInt stitching, and
// forecasts the instances it completes.
func (e *forecaster) source(ctx context.Context, c *conv.Conversation, none []map[ledger.TaskID]string) error {
	sim := e.compint
	if sim != nil && sim.embed != nil && sim.embed.seen < sim.embed.pool {
		sim.embed.seen++
		if text := compint.EmbedText(sim.embed.tok, c, sim.embed.maxTokens); text != "" {
			sim.embed.texts++
			sim.embed.tokens += int64(sim.embed.tok.Count(text))
		}
	}
	if sim == nil || sim.st.Done() {
		return nil
	}
	b := sim.st.Add(c)
	if b == nil {
		return nil
	}
	return sim.bd.Expand(b, func(in *compint.Instance) error {
		return e.conversation(ctx, 0, measure.Origin, in.Conv, none)
	})
}

// walk goes through the run's conversations, then those of the input
// files not ingested yet.
func (e *forecaster) walk(ctx context.Context) error {
	done := false
	if e.l != nil && !e.walkAll {
		var err error
		if done, err = e.finished(ctx); err != nil {
			return err
		}
	}
	if e.l != nil && !done {
		err := e.l.EachPage(ctx, 512, func(page []ledger.Stored, after, upto int64) error {
			recorded := make([]map[ledger.TaskID]string, len(e.fc.Stages))
			for i, sf := range e.fc.Stages {
				if sf.stage == nil {
					continue
				}
				var err error
				if recorded[i], err = e.l.TaskStates(ctx, sf.Stage, sf.lv, after, upto); err != nil {
					return err
				}
			}
			none := make([]map[ledger.TaskID]string, len(e.fc.Stages))
			for _, s := range page {
				if err := e.conversation(ctx, s.Seq, s.Origin, s.Conv, recorded); err != nil {
					return err
				}
				if s.Origin == ledger.OriginSource {
					if err := e.source(ctx, s.Conv, none); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if e.plan.Ingest == nil {
		return nil
	}
	return e.inputs(ctx)
}

// finished counts, from the task tables, the run's conversations and every
// stage's recorded tasks when no stage has a task left in its scope and no
// stitching is to be predicted, and reports whether it did. Walking the
// conversations would find nothing to ask and takes minutes at a million.
func (e *forecaster) finished(ctx context.Context) (bool, error) {
	if e.compint != nil && !e.compint.st.Done() {
		return false, nil
	}
	counts := map[string]int64{} // conversations per scope: most stages share one
	count := func(sc ledger.Scope) (int64, error) {
		n, ok := counts[sc.String()]
		if ok {
			return n, nil
		}
		n, err := e.l.In(sc).CountConversations(ctx)
		if err == nil {
			counts[sc.String()] = n
		}
		return n, err
	}
	recorded := make([]int64, len(e.fc.Stages))
	for i, sf := range e.fc.Stages {
		if sf.stage == nil {
			continue
		}
		v := e.l.In(sf.scope)
		n, err := count(sf.scope)
		if err != nil {
			return false, err
		}
		for _, vr := range sf.lv {
			done, failed, err := v.TaskCounts(ctx, sf.Stage, vr)
			if err != nil {
				return false, err
			}
			if done+failed != n {
				return false, nil
			}
			recorded[i] += done + failed
		}
	}
	n, err := count(ledger.AllOrigins)
	if err != nil {
		return false, err
	}
	e.fc.Conversations = n
	for i := range recorded {
		e.fc.Stages[i].DoneTasks = recorded[i]
	}
	e.counted = true
	return true, nil
}

// conversation asks every stage about one conversation. recorded holds,
// per stage, the tasks earlier runs recorded (nil: none).
func (e *forecaster) conversation(ctx context.Context, seq int64, origin string, c *conv.Conversation, recorded []map[ledger.TaskID]string) error {
	e.fc.Conversations++
	f := pipeline.NewForecast(ratioCounter(e.counter, c))
	f.Unread = e.unread
	sent := map[string]bool{}
	// The calls of one conversation go out close together, so a provider's
	// prompt cache can serve what they share; across conversations it is
	// not counted on.
	prefixes := pipeline.NewPrefixCache()
	for i := range e.fc.Stages {
		sf := &e.fc.Stages[i]
		if sf.stage == nil || !sf.scope.Has(origin) {
			continue
		}
		t := pipeline.Task{Seq: seq, Conv: c, Origin: origin}
		for _, v := range sf.lv {
			if _, ok := recorded[i][ledger.TaskID{Stage: sf.Stage, Variant: v.Name, Version: v.Version, ConvSeq: seq}]; ok {
				sf.DoneTasks++
				continue
			}
			sf.PendingTasks++
			t.Variants = append(t.Variants, pipeline.Variant(v))
		}
		est, ok := sf.stage.(pipeline.Estimator)
		if !ok || len(t.Variants) == 0 {
			continue
		}
		calls, err := est.Estimate(ctx, t, f)
		if err != nil {
			return fmt.Errorf("estimating %s for %s: %w", sf.Stage, c.ID, err)
		}
		batched := 0 // calls that would go through batches
		for _, call := range calls {
			if sent[call.Key] {
				continue // the same request: the run sends it once
			}
			sent[call.Key] = true
			if e.client != nil && e.client.BatchMode(call.Role) {
				batched++
			}
			out := call.CompletionTokens
			if m := e.plan.Model.maxTokens(call.Role); m > 0 {
				out = min(out, m)
			}
			cached := min(llm.CacheableTokens(prefixes.Shared(call)), call.PromptTokens)
			sf.Calls++
			sf.InputTokens += int64(call.PromptTokens)
			sf.CachedTokens += int64(cached)
			sf.OutputTokens += int64(out)
			if !contains(sf.Roles, call.Role) {
				sf.Roles = append(sf.Roles, call.Role)
			}
			usd, err := e.client.EstimateUsageCost(call.Role, llm.Usage{Prompt: call.PromptTokens, CachedPrompt: cached, Completion: out})
			if err != nil {
				return err
			}
			if usd == 0 && call.PromptTokens > 0 {
				sf.Unpriced = true
			}
			sf.CostUSD += usd
		}
		e.rounds(sf, c, batched)
	}
	return nil
}

// inputs reads the input files the run has not finished ingesting, through
// the plan's filters and deduplication.
func (e *forecaster) inputs(ctx context.Context) error {
	in := e.plan.Ingest
	keep, err := in.Filter.keep()
	if err != nil {
		return err
	}
	open := opener(in.Format, in.MaxLineBytes)
	seen := newSeenSet()
	near, err := in.Filter.nearSeen()
	if err != nil {
		return err
	}
	none := make([]map[ledger.TaskID]string, len(e.fc.Stages))
	for _, path := range in.Files {
		fi := InputForecast{Path: path, State: "new"}
		st, err := os.Stat(path)
		if err != nil {
			fi.State = "missing"
			e.fc.Inputs = append(e.fc.Inputs, fi)
			e.fc.StopsAt, e.stopErr = "ingest", err // before any stage: the run reads its inputs first
			continue
		}
		fi.Bytes = st.Size()
		var skip int64
		if e.l != nil {
			abs, _ := filepath.Abs(path)
			if got, ok, err := e.l.Input(ctx, abs); err != nil {
				return err
			} else if ok {
				fi.State, skip = fmt.Sprintf("partly read (%d records)", got.RecordsDone), got.RecordsDone
				if got.Finished {
					fi.State = "already ingested"
				}
			}
		}
		e.fc.Inputs = append(e.fc.Inputs, fi)
		if fi.State == "already ingested" {
			continue
		}
		rd, _, err := open(ctx, path)
		if err != nil {
			return fmt.Errorf("reading %s for the estimate: %w", path, err)
		}
		rd = in.Filter.labelAhead(rd, skip, e.plan.Shard.Owns) // languages as ingest labels them
		for n := int64(0); ; n++ {
			rec, err := rd.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rd.Close()
				return fmt.Errorf("reading %s for the estimate: %w", path, err)
			}
			if n < skip || rec.Conv == nil || !e.plan.Shard.Owns(rec.Conv.ID) {
				continue
			}
			if ok, _ := keep(rec.Conv); !ok {
				continue
			}
			if in.Filter.dedupes() && !seen.add(rec.Conv.ContentHash()) {
				continue
			}
			if near != nil && near.drops(rec.Conv) {
				continue
			}
			if err := e.conversation(ctx, 0, ledger.OriginSource, rec.Conv, none); err != nil {
				rd.Close()
				return err
			}
			if err := e.source(ctx, rec.Conv, none); err != nil {
				rd.Close()
				return err
			}
		}
		rd.Close()
	}
	return nil
}

// embedRow adds the forecast of topic stitching's embedding requests as a
// stage row of its own (one batch round in batch mode: stitching waits for
// every embedding).
func (e *forecaster) embedRow() {
	sim := e.compint
	if sim == nil || sim.embed == nil || sim.embed.texts == 0 || e.client == nil {
		return
	}
	per := int64(e.client.EmbedInputs(""))
	sf := StageForecast{Stage: "compint-embed", Label: "compint embeddings", PendingTasks: sim.embed.texts,
		Calls: (sim.embed.texts + per - 1) / per, InputTokens: sim.embed.tokens, Roles: []string{llm.EmbedderRole}}
	cost, err := e.client.EstimateUsageCost(llm.EmbedderRole, llm.Usage{Prompt: int(sim.embed.tokens)})
	if err == nil {
		sf.CostUSD, sf.Unpriced = cost, cost == 0
	}
	if e.client.BatchMode(llm.EmbedderRole) {
		sf.BatchRounds = 1
	}
	e.fc.Stages = append(e.fc.Stages, sf)
}

// finish totals the stages and writes the notes.
func (e *forecaster) finish() {
	e.embedRow()
	for _, line := range strings.Split(strings.TrimSpace(e.notes.String()), "\n") {
		if line != "" {
			e.fc.Notes = append(e.fc.Notes, line)
		}
	}
	for i := range e.fc.Stages {
		sf := &e.fc.Stages[i]
		if sf.Calls > 0 {
			sf.OutputTokensPerCall = sf.OutputTokens / sf.Calls
		}
		e.fc.TotalCalls += sf.Calls
		e.fc.TotalCostUSD += sf.CostUSD
		e.fc.TotalInputTokens += sf.InputTokens
		e.fc.TotalCachedTokens += sf.CachedTokens
		if sf.Unpriced {
			e.note("%s: a model of role %s has no price (set models.<name>.price); its calls are counted as free", sf.Label, strings.Join(sf.Roles, ", "))
		}
	}
	e.finishRounds()
	if e.ac3 {
		e.note("AC3 operators are counted as analyzing every turn past their floor (the reset cap is not known in advance), and their contexts there as distinct from every other strategy's: an upper bound")
	}
	if e.plan.LiC != nil {
		e.note("the lic step (simulation, check, replay) is not forecast: its calls depend on the trajectories it has not simulated yet")
		if m := e.plan.LiC.Memory; len(m.Strategies) > 0 {
			e.note("lic memory arm (%s): sequential: the pool's instances are replayed one at a time in an order drawn from seed %d, each waiting for the one before it to be answered, graded and learned from (5 rounds of calls per instance: step 1, step 2, the %d answers, reflection, unify; workers and batch mode do not apply; the operators' arms run side by side)",
				strings.Join(m.Strategies, "+memory, ")+"+memory", m.Seed, max(e.plan.LiC.Reruns, 1))
		}
	}
	e.note("answers already in the run's cache would cost nothing; prices are those of the config")
	if e.plan.Ingest != nil && e.plan.Ingest.Filter.dedupes() {
		e.note("duplicates among input files not yet ingested are found with a fixed-size filter; duplicates of conversations already in the run are not")
	}
	if e.plan.Ingest != nil && e.plan.Ingest.Filter.Near != nil {
		e.note("near duplicates are counted, in fixed memory, as conversations of the files not yet ingested that share a band of their signature with one kept before them, without comparing the two (that needs the run's index): an upper bound on what ingest drops")
	}
}

func (e *forecaster) note(format string, args ...any) {
	e.fc.Notes = append(e.fc.Notes, fmt.Sprintf(format, args...))
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// ratioCounter returns a token counter for the prompts of one
// conversation: a sample of the conversation's own text (its first
// sampleBytes) is tokenized, and any text is then counted at that
// tokens-per-byte. A prompt holds the history before its turn, so counting
// prompts exactly would tokenize the history once per turn and prompt; a
// dry run over a million conversations cannot afford that, and the ratio
// keeps the estimate within a few percent.
func ratioCounter(counter *tokens.Counter, c *conv.Conversation) func(string) int {
	// Measured on first use: a conversation whose tasks are all recorded
	// asks for no count, and tokenizing its sample anyway made a dry run
	// over a finished run cost minutes per 10k conversations.
	ratio := -1.0
	return func(s string) int {
		if ratio < 0 {
			ratio = sampleRatio(counter, c)
		}
		return int(float64(len(s))*ratio + 0.5)
	}
}

// sampleRatio is tokens per byte over the first sampleBytes of c's text.
func sampleRatio(counter *tokens.Counter, c *conv.Conversation) float64 {
	const sampleBytes = 4096
	toks, size := 0, 0
	for i := -1; i < len(c.Messages) && size < sampleBytes; i++ {
		text := c.System
		if i >= 0 {
			text = c.Messages[i].Content
		}
		if len(text) > sampleBytes-size {
			text = text[:sampleBytes-size]
		}
		toks += counter.Count(text)
		size += len(text)
	}
	if size > 0 && toks > 0 {
		return float64(toks) / float64(size)
	}
	return 0.25 // about four bytes a token, for a conversation with no text
}
