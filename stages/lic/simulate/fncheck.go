package simulate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/lic/grade"
)

// FNStageName is the false-negative check's stage name.
const FNStageName = "lic-fncheck"

// FNRole is the default role of the false-negative check.
const FNRole = "fn_check"

const fnVersion = "lic-fncheck/v2"

// fnPrompt asks whether the user's messages, taken together, still carry
// the task. It is ours; the paper's Prompt 7 asks the same question and,
// as here, shows the checker the task's system message (the schema or
// the functions) and the reference answer, so that it can tell a detail
// the answer depends on from one it does not.
const fnPrompt = `You check a simulated conversation for lost information. A task was split into pieces and a simulated user passed them to an assistant over several messages, in their own words. You get the original, fully specified task, the system message the assistant saw (it may hold a database schema or function definitions), the reference answer when there is one, and the user's messages.
Decide whether the user's messages, taken together with the system message, give enough information to reach the reference answer of the original task exactly as specified: every quantity, name, condition and required output the answer depends on must be stated or clearly implied, and nothing may be changed or contradicted. Wording, order and casual style do not matter. The reference answer is there to show what matters; do not judge whether the assistant found it. Flag only clear losses or distortions; when in doubt, count the messages as sufficient.
Answer with a JSON object: {"sufficient": true or false, "reason": "one sentence"}.`

// FNCheck is the false-negative pre-filter: once per instance, on the
// baseline's traces only, a model judges whether the union of the
// simulated user's messages carries the original task. Instances it
// flags leave the pool of every arm, which is why it never looks at a
// strategy's context. It runs only for instances whose baseline failed at
// least once (the trace judged is the first failing replicate's); the
// others are recorded as not checked.
type FNCheck struct {
	client  *llm.Client
	units   UnitReader
	sim     *Stage
	role    string
	variant pipeline.Variant
}

// NewFNCheck returns the check over the trajectories of sim, asking role
// (FNRole when ""); settings describe the model bound to it.
func NewFNCheck(client *llm.Client, units UnitReader, sim *Stage, role, settings string) *FNCheck {
	role = cmp.Or(role, FNRole)
	simV := ""
	if vs := sim.Variants(); len(vs) > 0 {
		simV = fmt.Sprintf("%s*%d", vs[0].Version, len(vs))
	}
	h := sim.opts.Prompts.fnVersion()
	return &FNCheck{client: client, units: units, sim: sim, role: role,
		variant: pipeline.Variant{Name: "check", Version: fmt.Sprintf("%s;role=%s/%s;prompt=%s;sim=%s", fnVersion, role, settings, h, promptHash(simV))}}
}

// Verdict is what one check unit stores.
type Verdict struct {
	Instance string `json:"instance"`
	Task     string `json:"task"`
	// Checked is false when no call was made: the baseline never failed,
	// or the record is not a LiC instance.
	Checked    bool   `json:"checked"`
	Replicate  int    `json:"replicate,omitempty"` // the trace judged
	Sufficient bool   `json:"sufficient"`
	Reason     string `json:"reason"`
}

// Flagged reports whether the instance leaves the pool.
func (v Verdict) Flagged() bool { return v.Checked && !v.Sufficient }

// Name implements pipeline.Stage.
func (f *FNCheck) Name() string { return FNStageName }

// Prompts returns the user's template of the check, if any, for the run
// to say which one is in use.
func (f *FNCheck) Prompts() []*prompt.Template {
	return []*prompt.Template{f.sim.opts.Prompts.FNCheck}
}

// Variants implements pipeline.Stage.
func (f *FNCheck) Variants() []pipeline.Variant { return []pipeline.Variant{f.variant} }

// Scope implements pipeline.Scoped.
func (f *FNCheck) Scope() ledger.Scope { return ledger.MustOrigins(ledger.OriginSource) }

// ModelWindow implements pipeline.ModelStage.
func (f *FNCheck) ModelWindow() int { return pipeline.DefaultWindow(f.client, f.role) }

// Process implements pipeline.Stage.
func (f *FNCheck) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	trs, err := Stored(ctx, f.units, f.sim, t.Conv.ID)
	if err != nil {
		return nil, err
	}
	u := pipeline.Unit{Turn: max(t.Conv.UserTurns(), 1), Attempts: 1}
	var v Verdict
	err = t.Each(ctx, 1, 1, func(ctx context.Context, _ int) error {
		var err error
		v, u, err = f.check(ctx, t, trs, u)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checking %s: %w", t.Conv.ID, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	u.Output = b
	return []pipeline.Result{{Variant: t.Variants[0], Units: []pipeline.Unit{u}}}, nil
}

func (f *FNCheck) check(ctx context.Context, t pipeline.Task, trs []Trajectory, u pipeline.Unit) (Verdict, pipeline.Unit, error) {
	var v Verdict
	if len(trs) == 0 || trs[0].Skipped != "" {
		v.Reason = "not a LiC instance"
		return v, u, nil
	}
	v.Instance, v.Task = trs[0].Instance, trs[0].Task
	var trace *Trajectory
	for i := range trs {
		if trs[i].Failed() {
			trace = &trs[i]
			break
		}
	}
	if trace == nil {
		v.Reason = "the baseline never failed; nothing to check"
		return v, u, nil
	}
	in, _ := instanceOf(t.Conv)
	msgs, err := f.sim.opts.Prompts.fnMessages(in, trace)
	if err != nil {
		return v, u, err
	}
	req := llm.Request{Role: f.role, Stage: FNStageName, JSON: true, Reroll: t.Retry * 3, Messages: msgs}
	type answer struct {
		Sufficient *bool  `json:"sufficient"`
		Reason     string `json:"reason"`
	}
	a, resp, err := llm.CallParsed(ctx, f.client, req, 2, func(r llm.Response) (answer, error) {
		var a answer
		if err := parse.JSON(r.Text, &a); err != nil {
			return a, err
		}
		if a.Sufficient == nil {
			return a, errors.New(`no "sufficient" field`)
		}
		return a, nil
	})
	if err != nil {
		raw, unit := llm.UnitFailure(err)
		if !unit {
			return v, u, err
		}
		u.Failed, u.Error, u.Raw = true, err.Error(), raw
		return v, u, nil
	}
	u.Tokens = int64(resp.Usage.Completion)
	v.Checked, v.Replicate, v.Sufficient, v.Reason = true, trace.Replicate, *a.Sufficient, strings.TrimSpace(a.Reason)
	return v, u, nil
}

// fnInput lays out the original task, the system message and reference
// answer of trace, and its user's messages.
func fnInput(in *grade.Instance, trace *Trajectory) string {
	var b strings.Builder
	b.WriteString("Original task:\n")
	b.WriteString(Original(in, trace.Shards))
	if sys := strings.TrimSpace(trace.System); sys != "" {
		b.WriteString("\n\nThe assistant's system message:\n")
		b.WriteString(sys)
	}
	if ref := Reference(in); ref != "" {
		b.WriteString("\n\nReference answer:\n")
		b.WriteString(ref)
	}
	b.WriteString("\n\nThe user's messages:\n")
	k := 0
	for _, m := range trace.Messages {
		if m.Role == conv.User {
			k++
			fmt.Fprintf(&b, "(%d) %s\n", k, m.Content)
		}
	}
	return b.String()
}

// Reference is the answer an instance is graded against, as text: the
// final number of a math solution's reference, the reference query, the
// expected calls; "" for code, whose reference is its tests.
func Reference(in *grade.Instance) string {
	if in == nil {
		return ""
	}
	switch in.Task {
	case grade.TaskMath:
		if n, ok := grade.GSM8KAnswer(in.Answer); ok {
			return n.Text
		}
		return strings.TrimSpace(in.Answer)
	case grade.TaskDatabase:
		return strings.TrimSpace(in.ReferenceSQL)
	case grade.TaskActions:
		return strings.TrimSpace(string(in.ReferenceAnswer))
	}
	return ""
}

// Original is the fully specified task of an instance: its single-turn
// question as the record holds it (question for math,
// fully_specified_question for database and actions, prompt for code),
// else its shards joined.
func Original(in *grade.Instance, shards []string) string {
	if in != nil {
		if s := strings.TrimSpace(in.Question); s != "" {
			return s
		}
		if s := strings.TrimSpace(string(in.FullySpecifiedQuestion)); s != "" {
			return s
		}
		if s := strings.TrimSpace(in.Prompt); s != "" {
			return s
		}
	}
	return strings.Join(shards, "\n")
}

// Stored reads the verdict the check recorded for an instance.
func (f *FNCheck) Stored(ctx context.Context, units UnitReader, convID string) (Verdict, error) {
	got, err := units.ConversationUnits(ctx, FNStageName, convID, 0)
	if err != nil {
		return Verdict{}, fmt.Errorf("reading the false-negative check of %s: %w", convID, err)
	}
	for _, u := range got {
		if u.Variant == f.variant.Name && u.Version == f.variant.Version && u.Status == ledger.Done {
			var v Verdict
			if err := json.Unmarshal(u.Output, &v); err != nil {
				return v, fmt.Errorf("decoding the false-negative check of %s: %w", convID, err)
			}
			return v, nil
		}
	}
	return Verdict{}, fmt.Errorf("the false-negative check of %s is not stored (run %s to the end first)", convID, FNStageName)
}
