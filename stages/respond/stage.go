package respond

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// StageName is the respond stage's name in unit keys, status and reports.
const StageName = "respond"

// DefaultRole is the role that answers when no respondent is configured.
const DefaultRole = "respondent"

// version is bumped when what a unit stores or how it is produced changes.
const version = "respond/v1"

// UnitReader reads stored units of earlier stages; *ledger.Ledger
// satisfies it.
type UnitReader interface {
	ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
}

// ReadPlanned reads the units stage stored for conversation convID that
// are done at the version versions plans for their variant, by variant and
// turn, each as decode reads it; what names the units in the error of the
// read ("curated contexts"). Respond reads curated contexts so, and the
// judge respond's answers.
func ReadPlanned[T any](ctx context.Context, r UnitReader, stage, convID, what string, versions map[string]string, decode func(ledger.Unit) (T, error)) (map[string]map[int]T, error) {
	us, err := r.ConversationUnits(ctx, stage, convID, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s: %w", what, convID, err)
	}
	out := map[string]map[int]T{}
	for _, u := range us {
		if u.Status != ledger.Done || versions[u.Variant] != u.Version {
			continue
		}
		v, err := decode(u)
		if err != nil {
			return nil, err
		}
		if out[u.Variant] == nil {
			out[u.Variant] = map[int]T{}
		}
		out[u.Variant][u.Turn] = v
	}
	return out, nil
}

// Respondent is one role that writes answers. Label, when set, names its
// variants strategy@Label so several respondents can run side by side;
// Settings describes the model and sampling parameters bound to the role
// (cmd fills it) so that changing them makes the work pending again.
type Respondent struct {
	Role     string
	Label    string
	Settings string
}

// Options configure the stage.
type Options struct {
	// Strategies are the curate variants to answer from.
	Strategies []string
	// CurateVersions gives, per strategy, the curate version to read (the
	// curate stage's current plan); a strategy without one is an error.
	CurateVersions map[string]string
	Respondents    []Respondent // default: one, DefaultRole, no label
	Samples        int          // answers per context; default 1
	// Retries is how many times an empty answer is asked again; default 2.
	Retries int
	// Turns selects the curated turns answered: from a turn on, and only
	// the last K user turns of each conversation (a replay regenerates the
	// final turn of each trajectory). The zero Turns answers every curated
	// turn; a setting goes into the versions only when set.
	Turns pipeline.Turns
}

// Stage is the respond pipeline stage.
type Stage struct {
	client   *llm.Client
	units    UnitReader
	opts     Options
	variants []pipeline.Variant
	byName   map[string]variantInfo
}

type variantInfo struct {
	strategy   string
	curateVer  string
	respondent Respondent
}

// VariantName is the variant of strategy answered by a respondent labelled
// label: the strategy itself when label is empty, else strategy@label.
func VariantName(strategy, label string) string {
	if label == "" {
		return strategy
	}
	return strategy + "@" + label
}

// New returns the stage. It fails when a strategy has no curate version.
func New(client *llm.Client, units UnitReader, opts Options) (*Stage, error) {
	if opts.Samples <= 0 {
		opts.Samples = 1
	}
	if opts.Retries < 0 {
		opts.Retries = 0
	} else if opts.Retries == 0 {
		opts.Retries = 2
	}
	if len(opts.Respondents) == 0 {
		opts.Respondents = []Respondent{{Role: DefaultRole}}
	}
	if len(opts.Strategies) == 0 {
		return nil, errors.New("building respond stage: no strategies")
	}
	if err := opts.Turns.Validate(); err != nil {
		return nil, fmt.Errorf("building respond stage: %w", err)
	}
	s := &Stage{client: client, units: units, opts: opts, byName: map[string]variantInfo{}}
	for _, r := range opts.Respondents {
		if r.Role == "" {
			r.Role = DefaultRole
		}
		for _, st := range opts.Strategies {
			cv, ok := opts.CurateVersions[st]
			if !ok {
				return nil, fmt.Errorf("building respond stage: strategy %q has not been curated in this run (run curate with it first)", st)
			}
			name := VariantName(st, r.Label)
			if _, dup := s.byName[name]; dup {
				return nil, fmt.Errorf("building respond stage: variant %q appears twice (give respondents distinct labels)", name)
			}
			s.byName[name] = variantInfo{strategy: st, curateVer: cv, respondent: r}
			s.variants = append(s.variants, pipeline.Variant{
				Name:    name,
				Version: fmt.Sprintf("%s;curate=%s;role=%s;model=%s;samples=%d%s", version, cv, r.Role, r.Settings, opts.Samples, opts.Turns.Tag()),
			})
		}
	}
	return s, nil
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// ModelWindow implements pipeline.ModelStage: the window of the
// respondents' endpoints.
func (s *Stage) ModelWindow() int {
	roles := make([]string, 0, len(s.opts.Respondents))
	for _, r := range s.opts.Respondents {
		roles = append(roles, cmp.Or(r.Role, DefaultRole))
	}
	return pipeline.DefaultWindow(s.client, roles...)
}

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant { return s.variants }

// job is one sample of one unit.
type job struct {
	unit   int
	sample int
	msgs   []conv.Message
}

// unitState is one unit being answered.
type unitState struct {
	Pending[Output]
	info variantInfo
}

// Process implements pipeline.Stage. It answers every done curate unit of
// the task's variants at a selected turn (Options.Turns); a curate unit
// that is missing or failed gives no respond unit. A rejected request (400) or an answer that stays empty fails
// its unit with the error and raw text kept; endpoint errors that would fail
// every unit (bad key, budget reached, cancellation) are returned.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	stored, err := s.units.ConversationUnits(ctx, curate.StageName, t.Conv.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("reading curated contexts of %s: %w", t.Conv.ID, err)
	}
	var states []*unitState
	var jobs []job
	userTurns := t.Conv.UserTurns()
	results := make([]pipeline.Result, 0, len(t.Variants))
	firstOf := make([]int, 0, len(t.Variants)) // first state of each result
	for _, v := range t.Variants {
		info, ok := s.byName[v.Name]
		if !ok {
			return nil, fmt.Errorf("answering %s: no variant %q", t.Conv.ID, v.Name)
		}
		results = append(results, pipeline.Result{Variant: v})
		firstOf = append(firstOf, len(states))
		for _, u := range stored {
			if u.Variant != info.strategy || u.Version != info.curateVer || u.Status != ledger.Done || !s.opts.Turns.Has(u.Turn, userTurns) {
				continue
			}
			x, err := curated.DecodeContext(u.Output)
			if err != nil {
				return nil, fmt.Errorf("decoding curated context %s: %w", u.Key, err)
			}
			msgs, err := x.MaterializeChecked(t.Conv)
			if err != nil {
				return nil, fmt.Errorf("curated context %s does not fit conversation %s: %w", u.Key, t.Conv.ID, err)
			}
			st := &unitState{info: info, Pending: Pending[Output]{Turn: u.Turn, Out: Output{
				Strategy: info.strategy, Respondent: info.respondent.Role, ContextTokens: x.Tokens,
				Samples: make([]Sample, s.opts.Samples),
			}}}
			for i := range s.opts.Samples {
				jobs = append(jobs, job{unit: len(states), sample: i, msgs: msgs})
			}
			states = append(states, st)
		}
	}
	answers, err := FanOut(ctx, t, len(jobs), func(ctx context.Context, k int) (struct{}, llm.Response, error) {
		return s.ask(ctx, states[jobs[k].unit].info.respondent.Role, jobs[k], t.Retry)
	})
	if err != nil {
		return nil, fmt.Errorf("answering %s: %w", t.Conv.ID, err)
	}
	for k, j := range jobs {
		st, a := states[j.unit], answers[k]
		smp := Sample{Index: j.sample}
		if a.Err != nil {
			st.Fail(fmt.Sprintf("sample %d", j.sample), a.Err)
		} else {
			smp.Text, smp.Reasoning, smp.FinishReason = a.Resp.Text, a.Resp.Reasoning, a.Resp.FinishReason
			smp.PromptTokens, smp.CompletionTokens = a.Resp.Usage.Prompt, a.Resp.Usage.Completion
			st.Tokens += int64(a.Resp.Usage.Completion)
			if st.Out.Model == "" || j.sample == 0 {
				st.Out.Model, st.Out.Endpoint = a.Resp.Model, a.Resp.Endpoint
			}
		}
		st.Out.Samples[j.sample] = smp
	}
	for ri := range results {
		end := len(states)
		if ri+1 < len(firstOf) {
			end = firstOf[ri+1]
		}
		for _, st := range states[firstOf[ri]:end] {
			u, err := st.Unit()
			if err != nil {
				return nil, fmt.Errorf("encoding answer of %s turn %d: %w", t.Conv.ID, st.Turn, err)
			}
			results[ri].Units = append(results[ri].Units, u)
		}
	}
	return results, nil
}

// ask asks for one sample; an answer that is empty after its reasoning is
// removed is asked again as a fresh draw.
func (s *Stage) ask(ctx context.Context, role string, j job, retry int) (struct{}, llm.Response, error) {
	req := llm.Request{Role: role, Stage: StageName, Messages: j.msgs, SampleIndex: j.sample, Reroll: retry * (s.opts.Retries + 1)}
	return llm.CallParsed(ctx, s.client, req, s.opts.Retries, func(r llm.Response) (struct{}, error) {
		if strings.TrimSpace(r.Text) == "" {
			return struct{}{}, errors.New("empty answer")
		}
		return struct{}{}, nil
	})
}
