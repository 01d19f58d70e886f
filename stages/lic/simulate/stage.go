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
	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/lic/grade"
)

// StageName is the simulate stage's name in unit keys, status and reports.
const StageName = "lic-simulate"

// The default roles.
const (
	UserRole       = "user_sim"
	RespondentRole = "respondent"
)

// How user turns are written.
const (
	// ModeModel: the user simulator rephrases each shard after the first,
	// as LiC does (the paper's setting).
	ModeModel = "model"
	// ModeVerbatim: each user turn is the shard's text, with no model.
	ModeVerbatim = "verbatim"
)

const version = "lic-simulate/v2"

// sampleBase offsets the sample index of a replicate's calls (replicate r
// draws sample sampleBase+r-1). A replay's fc context of the final turn is
// the very request the baseline answered; without the offset its first
// rerun would be the baseline's own answer read back from the cache, the
// answer that decided whether the instance was selected.
const sampleBase = 1000

// Options configure the stage.
type Options struct {
	Replicates int // trajectories per instance (default 1)
	// TaskReplicates overrides Replicates for the tasks it names (the AC3
	// paper's B.1.4: five baseline runs, four on code). A task's
	// replicates past its count are recorded as unused, never simulated.
	TaskReplicates map[string]int
	Mode           string // ModeModel (default) or ModeVerbatim
	// UserRole and Respondent are the roles that play the user simulator
	// and the assistant; their Settings describe the model and sampling
	// bound to them, so that changing either makes the work pending again.
	UserRole, Respondent             string
	UserSettings, RespondentSettings string
	Retries                          int // re-asks after an empty answer (default 2)
	// Grader grades each trajectory's final answer; nil leaves them
	// ungraded.
	Grader *grade.Grader
	// Prompts replace the user simulator's, the respondent's and the
	// false-negative check's prompts with users' templates.
	Prompts Prompts
}

// Stage is the simulate stage.
type Stage struct {
	client   *llm.Client
	opts     Options
	variants []pipeline.Variant
}

// New returns the stage.
func New(client *llm.Client, opts Options) (*Stage, error) {
	if opts.Replicates <= 0 {
		opts.Replicates = 1
	}
	opts.Mode = cmp.Or(opts.Mode, ModeModel)
	if opts.Mode != ModeModel && opts.Mode != ModeVerbatim && opts.Mode != ModeLiC {
		return nil, fmt.Errorf("building %s: mode %q: want %s, %s or %s", StageName, opts.Mode, ModeLiC, ModeModel, ModeVerbatim)
	}
	if opts.Mode == ModeLiC && opts.Prompts.UserSim != nil {
		return nil, fmt.Errorf("building %s: mode %s chooses the shards with ac3's own user simulator prompt; a user_sim template is for mode %s", StageName, ModeLiC, ModeModel)
	}
	opts.UserRole = cmp.Or(opts.UserRole, UserRole)
	opts.Respondent = cmp.Or(opts.Respondent, RespondentRole)
	if opts.Retries < 0 {
		opts.Retries = 0
	} else if opts.Retries == 0 {
		opts.Retries = 2
	}
	if err := opts.Prompts.check(); err != nil {
		return nil, fmt.Errorf("building %s: %w", StageName, err)
	}
	s := &Stage{client: client, opts: opts}
	user := "none"
	switch opts.Mode {
	case ModeModel:
		user = opts.UserRole + "/" + opts.UserSettings
	case ModeLiC:
		// Its own prompt, kept out of promptsVersion so that adding it did
		// not make the other modes' trajectories pending again.
		user = opts.UserRole + "/" + opts.UserSettings + "/" + promptHash(licUserPrompt)
	}
	g := "none"
	if opts.Grader != nil {
		g = opts.Grader.Fingerprint()
	}
	v := fmt.Sprintf("%s;mode=%s;user=%s;respondent=%s/%s;prompts=%s;grade=%s", version, opts.Mode, user, opts.Respondent, opts.RespondentSettings, promptsVersion()+opts.Prompts.version(), g)
	n := opts.Replicates
	for task, k := range opts.TaskReplicates {
		if k <= 0 {
			return nil, fmt.Errorf("building %s: task %s: %d replicates, want at least 1", StageName, task, k)
		}
		n = max(n, k)
	}
	for r := 1; r <= n; r++ {
		s.variants = append(s.variants, pipeline.Variant{Name: Replicate(r), Version: v})
	}
	return s, nil
}

// ReplicatesOf is how many baseline trajectories instances of task have.
func (s *Stage) ReplicatesOf(task string) int {
	if k, ok := s.opts.TaskReplicates[task]; ok {
		return k
	}
	return s.opts.Replicates
}

// Replicate is the variant name of replicate r (1-based).
func Replicate(r int) string { return fmt.Sprintf("r%d", r) }

// replicateOf reads the replicate number from a variant name.
func replicateOf(name string) (int, bool) {
	var r int
	if _, err := fmt.Sscanf(name, "r%d", &r); err != nil || r <= 0 || Replicate(r) != name {
		return 0, false
	}
	return r, true
}

// Name implements pipeline.Stage.
func (s *Stage) Name() string { return StageName }

// Prompts returns the users' templates the stage renders (ours are Go
// text, not templates), for the run to say which ones are in use.
func (s *Stage) Prompts() []*prompt.Template {
	return []*prompt.Template{s.opts.Prompts.UserSim, s.opts.Prompts.Respondent}
}

// Variants implements pipeline.Stage.
func (s *Stage) Variants() []pipeline.Variant { return s.variants }

// Scope implements pipeline.Scoped: the stage simulates ingested records
// only, never the trajectories made of them.
func (s *Stage) Scope() ledger.Scope { return ledger.MustOrigins(ledger.OriginSource) }

// ModelWindow implements pipeline.ModelStage.
func (s *Stage) ModelWindow() int {
	if s.opts.Mode == ModeModel || s.opts.Mode == ModeLiC {
		return pipeline.DefaultWindow(s.client, s.opts.Respondent, s.opts.UserRole)
	}
	return pipeline.DefaultWindow(s.client, s.opts.Respondent)
}

// Process implements pipeline.Stage: one unit per replicate, at the
// instance's last turn.
func (s *Stage) Process(ctx context.Context, t pipeline.Task) ([]pipeline.Result, error) {
	in, skip := instanceOf(t.Conv)
	results := make([]pipeline.Result, len(t.Variants))
	units := make([]pipeline.Unit, len(t.Variants))
	err := t.Each(ctx, len(t.Variants), 0, func(ctx context.Context, i int) error {
		v := t.Variants[i]
		r, ok := replicateOf(v.Name)
		if !ok {
			return fmt.Errorf("simulating %s: no variant %q", t.Conv.ID, v.Name)
		}
		tr := Trajectory{Replicate: r, Mode: s.opts.Mode, Skipped: skip}
		var u pipeline.Unit
		if skip == "" && r > s.ReplicatesOf(in.Task) {
			tr.Instance, tr.Task = in.TaskID, in.Task
			tr.Unused = fmt.Sprintf("task %s runs %d replicates", in.Task, s.ReplicatesOf(in.Task))
		} else if skip == "" {
			var err error
			u, err = s.simulate(ctx, t, in, r, t.Retry, &tr)
			if err != nil {
				return err
			}
		}
		b, err := json.Marshal(tr)
		if err != nil {
			return fmt.Errorf("encoding trajectory of %s: %w", t.Conv.ID, err)
		}
		u.Turn, u.Output, u.Attempts = max(t.Conv.UserTurns(), 1), b, 1
		units[i] = u
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("simulating %s: %w", t.Conv.ID, err)
	}
	for i, v := range t.Variants {
		results[i] = pipeline.Result{Variant: v, Units: []pipeline.Unit{units[i]}}
	}
	return results, nil
}

// instanceOf reads the LiC record a conversation was ingested from; skip
// says why it cannot be simulated.
func instanceOf(c *conv.Conversation) (*grade.Instance, string) {
	if len(c.Meta) == 0 {
		return nil, "no LiC record (the conversation has no metadata)"
	}
	in, err := grade.ParseInstance(c.Meta)
	if err != nil {
		return nil, err.Error()
	}
	if in.Task == "" {
		return nil, "not a LiC record (no task field)"
	}
	if in.TaskID == "" {
		in.TaskID = c.ID
	}
	return in, ""
}

// simulate plays one replicate out. An answer that fails for this unit
// alone (a rejected request, an empty reply after retries) fails the unit
// with the trajectory so far; other errors stop the run.
func (s *Stage) simulate(ctx context.Context, t pipeline.Task, in *grade.Instance, r, retry int, tr *Trajectory) (pipeline.Unit, error) {
	var u pipeline.Unit
	system, err := s.opts.Prompts.system(in)
	if err != nil {
		return u, fmt.Errorf("simulating %s: %w", in.TaskID, err)
	}
	tr.Instance, tr.Task, tr.System = in.TaskID, in.Task, system
	reroll := retry * (s.opts.Retries + 1)
	nonEmpty := func(resp llm.Response) (string, error) {
		if strings.TrimSpace(resp.Text) == "" {
			return "", errors.New("empty answer")
		}
		return resp.Text, nil
	}
	fail := func(what string, err error) (pipeline.Unit, error) {
		raw, unit := llm.UnitFailure(err)
		if !unit {
			return u, err
		}
		u.Failed, u.Error, u.Raw = true, err.Error(), raw
		if what != "" {
			u.Error = what + ": " + u.Error
		}
		return u, nil
	}
	answer := func(turn int) error {
		msgs := append([]conv.Message{{Role: conv.System, Content: tr.System}}, tr.Messages...)
		req := llm.Request{Role: s.opts.Respondent, Stage: StageName, Messages: msgs, SampleIndex: sampleBase + r - 1, Reroll: reroll}
		out, resp, err := llm.CallParsed(ctx, s.client, req, s.opts.Retries, nonEmpty)
		if err != nil {
			return fmt.Errorf("answer to turn %d: %w", turn, err)
		}
		tr.Model, tr.Endpoint = resp.Model, resp.Endpoint
		u.Tokens += int64(resp.Usage.Completion)
		tr.Messages = append(tr.Messages, conv.Message{Role: conv.Assistant, Content: out})
		return nil
	}
	var check func(answer string) (*grade.Result, error) // nil: no grader
	if s.opts.Grader != nil {
		check = func(answer string) (*grade.Result, error) {
			g, err := s.opts.Grader.Grade(ctx, in, answer)
			if errors.Is(err, grade.ErrBadInstance) {
				g, err = grade.Result{Task: in.Task, Status: grade.NotGraded, Reason: err.Error()}, nil
			}
			if err != nil {
				return nil, fmt.Errorf("grading the baseline of %s: %w", in.TaskID, err)
			}
			return &g, nil
		}
	}
	for _, m := range t.Conv.Messages {
		if m.Role == conv.User {
			tr.Shards = append(tr.Shards, m.Content)
		}
	}
	if s.opts.Mode == ModeLiC && len(tr.Shards) > 0 {
		why, err := s.playLiC(ctx, tr, r, reroll, answer, check)
		switch {
		case err != nil:
			return fail("", err)
		case why != "":
			u.Failed, u.Error = true, why
		}
		return u, nil
	}
	for turn, shard := range tr.Shards {
		turn++
		text := shard
		if s.opts.Mode == ModeModel && turn > 1 {
			msgs, err := s.opts.Prompts.userSim(tr.Messages, shard)
			if err != nil {
				return u, fmt.Errorf("simulating %s: %w", in.TaskID, err)
			}
			req := llm.Request{Role: s.opts.UserRole, Stage: StageName, Messages: msgs, SampleIndex: sampleBase + r - 1, Reroll: reroll}
			out, _, err := llm.CallParsed(ctx, s.client, req, s.opts.Retries, nonEmpty)
			if err != nil {
				return fail(fmt.Sprintf("user turn %d", turn), err)
			}
			text = strings.TrimSpace(out)
		}
		tr.Messages = append(tr.Messages, conv.Message{Role: conv.User, Content: text})
		if err := answer(turn); err != nil {
			return fail("", err)
		}
	}
	if check == nil || len(tr.Messages) == 0 {
		return u, nil
	}
	g, err := check(tr.Messages[len(tr.Messages)-1].Content)
	if err != nil {
		return u, err
	}
	tr.Grade = g
	return u, nil
}
