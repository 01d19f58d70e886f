package replay

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/analyze"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/memory"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/respond"
)

// The memory arm: the AC3 operators replayed with the online memory
// learning from outcomes, Table 1's "+Memory" rows (AC3 §3.3, App. F).
//
// The pool's trajectories are taken one at a time in a fixed order drawn
// from a seed (Order). For each one, the operator curates the final
// turn(s) with the cheatsheet as the instances before it left it, the
// respondent answers (the same requests the respond stage makes, so the
// run's cache shares them), the answers are graded, and then the analyzer
// reflects on the instance, its analyses and its graded outcome (correct or
// not), and merges the takeaways into the cheatsheet (analyze.Absorb). The
// next instance's step 2 reads the new cheatsheet. That makes the arm
// inherently sequential: instance k+1 cannot be analyzed before instance k
// is graded and learned from. Arms of different operators are separate
// chains and run side by side.
//
// Each instance's step (its grades, outcome and the cheatsheet after it) is
// written to the run's settings in one write, after the cheatsheet's text,
// and before the next instance reads it; a step once written is never
// written again. A run killed at any point resumes at the first instance
// with no step, from the cheatsheet the last step recorded; the calls of an
// instance that was under way when it died are answered from the run's
// cache. The accuracy report reads the steps (MemoryResults) as rows named
// <operator>+memory, paired by instance with the other arms.

// MemoryMeta is the settings key listing the run's current memory chains
// (JSON []MemoryChain); each chain's records are under MemoryMeta + "/" +
// its id + "/".
const MemoryMeta = "lic.memory"

// MemorySuffix ends the name of a memory arm's row: "reset+memory".
const MemorySuffix = "+memory"

// memoryLayout versions the chain's records and update rule; bump it when
// either changes.
const memoryLayout = "lic-memory/v1"

// MemoryOperators are the strategies a memory arm can replay: the AC3
// operators, whose step 2 reads the cheatsheet.
func MemoryOperators() []string {
	return []string{curated.OpAugment, curated.OpReset, curated.OpGatedReset, curated.OpRewrite}
}

// MemoryOptions configure the memory arm.
type MemoryOptions struct {
	Client *llm.Client
	// Curate holds the operators' settings, Analyzer included; its Memory
	// is ignored (the arm gives each instance its own).
	Curate  curate.Options
	Counter *tokens.Counter
	// Strategies are the operators replayed with memory (MemoryOperators).
	Strategies []string
	// Respondent is the answering role; RespondentSettings describes its
	// model and sampling, so a change starts new chains.
	Respondent, RespondentSettings string
	Reruns                         int // answers per instance (M, default 1)
	LastTurns                      int // final user turns curated (K, default 1); the last is graded
	Retries                        int // empty answers asked again (default 2, as respond)
	Grader                         *grade.Grader
	// Seed draws the order the instances are replayed and learned in.
	Seed uint64
	// Pool names the pool (its settings); another pool starts new chains.
	Pool  string
	Store memory.MetaStore
	Log   io.Writer
	// Stop, when it returns true, ends the arm before the next instance.
	Stop func() bool
}

// MemoryChain is one memory arm's chain as the run lists it.
type MemoryChain struct {
	ID       string `json:"id"`
	Row      string `json:"row"`      // "reset+memory"
	Operator string `json:"operator"` // the operator's version without memory
	Seed     uint64 `json:"seed"`
}

// MemoryStep is the record of one instance of a chain.
type MemoryStep struct {
	Pos      int    `json:"pos"` // 1-based position in the order
	Seq      int64  `json:"seq"` // the trajectory's seq in the run
	Conv     string `json:"conv"`
	Instance string `json:"instance"`
	Task     string `json:"task"`
	Row      string `json:"row"`
	Turn     int    `json:"turn"` // the graded (final) user turn
	// Before and After are the hashes (analyze.MemoryHash, "" for empty) of
	// the cheatsheet the instance was curated with and the one it left.
	Before    string   `json:"before"`
	After     string   `json:"after"`
	Reruns    []Graded `json:"reruns,omitempty"`
	Outcome   string   `json:"outcome"`
	Takeaways string   `json:"takeaways,omitempty"`
	Skipped   string   `json:"skipped,omitempty"` // why it taught nothing
	// Failed is set when a failed call (curating, answering or updating
	// the cheatsheet, after its retries) made the step teach nothing: the
	// run then ends as failed, and 'ac3 retry --stage lic-memory' drops the
	// chain from this step on, so the next run takes it again.
	Failed bool          `json:"failed,omitempty"`
	Words  int           `json:"words"` // of the cheatsheet after
	Usage  analyze.Usage `json:"usage"` // analyzer and memory calls
}

// Item is one trajectory of the pool.
type Item struct {
	Seq int64
	ID  string
}

// Order returns items in the memory arm's order for seed: sorted by a hash
// of the seed and the trajectory's id, so the order is fixed for a seed,
// differs between seeds, and does not depend on the order items are given.
func Order(items []Item, seed uint64) []Item {
	key := func(it Item) string {
		h := sha256.New()
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], seed)
		h.Write(b[:])
		h.Write([]byte(it.ID))
		return string(h.Sum(nil))
	}
	out := slices.Clone(items)
	keys := make(map[string]string, len(out))
	for _, it := range out {
		keys[it.ID] = key(it)
	}
	slices.SortFunc(out, func(a, b Item) int {
		return cmp.Or(strings.Compare(keys[a.ID], keys[b.ID]), strings.Compare(a.ID, b.ID))
	})
	return out
}

// MemoryArm runs the memory arms of one LiC replay.
type MemoryArm struct {
	opts   MemoryOptions
	chains []MemoryChain
}

// NewMemoryArm checks opts and names the chains. Store may be nil for an
// arm that only reports its chains (dry runs).
func NewMemoryArm(opts MemoryOptions) (*MemoryArm, error) {
	opts.Reruns, opts.LastTurns = max(opts.Reruns, 1), max(opts.LastTurns, 1)
	if opts.Retries == 0 {
		opts.Retries = 2
	}
	opts.Retries = max(opts.Retries, 0)
	an := opts.Curate.Analyzer
	if an == nil {
		return nil, errors.New("building the lic memory arm: no analyzer")
	}
	if opts.Grader == nil {
		return nil, errors.New("building the lic memory arm: no grader")
	}
	m := &MemoryArm{opts: opts}
	for _, name := range opts.Strategies {
		if !slices.Contains(MemoryOperators(), name) {
			return nil, fmt.Errorf("lic.memory.strategies: %q reads no cheatsheet; the memory arm replays %s", name, strings.Join(MemoryOperators(), ", "))
		}
		co := opts.Curate
		co.Memory = memory.Memory{}
		st, err := curate.ByName(name, co)
		if err != nil {
			return nil, fmt.Errorf("building the lic memory arm: %w", err)
		}
		row := name + MemorySuffix
		if slices.ContainsFunc(m.chains, func(c MemoryChain) bool { return c.Row == row }) {
			return nil, fmt.Errorf("lic.memory.strategies: %q is listed twice", name)
		}
		h := sha256.New()
		for _, s := range []string{memoryLayout, row, st.Version(), an.Version(), an.MemoryVersion(), opts.Respondent, opts.RespondentSettings,
			fmt.Sprint(opts.Reruns), fmt.Sprint(opts.LastTurns), opts.Grader.Fingerprint(), fmt.Sprint(opts.Seed), opts.Pool, fmt.Sprint(analyze.MaxCheatsheetWords)} {
			fmt.Fprintf(h, "%d:%s;", len(s), s)
		}
		m.chains = append(m.chains, MemoryChain{ID: hex.EncodeToString(h.Sum(nil)[:6]), Row: row, Operator: st.Version(), Seed: opts.Seed})
	}
	if len(m.chains) == 0 {
		return nil, errors.New("lic.memory.strategies: list at least one AC3 operator")
	}
	return m, nil
}

// SetRun sets where the arm logs its progress and what tells it to stop
// before the next instance (either may be nil).
func (m *MemoryArm) SetRun(log io.Writer, stop func() bool) { m.opts.Log, m.opts.Stop = log, stop }

// Chains returns the arm's chains, one per operator.
func (m *MemoryArm) Chains() []MemoryChain { return slices.Clone(m.chains) }

// Rows returns the names of the arm's rows in the accuracy report.
func (m *MemoryArm) Rows() []string {
	out := make([]string, len(m.chains))
	for i, c := range m.chains {
		out[i] = c.Row
	}
	return out
}

// Sequential says, in one sentence, why the arm cannot be parallel; the
// dry run, the help and the log print it.
func (m *MemoryArm) Sequential() string {
	return fmt.Sprintf("the memory arm (%s) is sequential: instances are replayed one at a time in an order drawn from seed %d, and each waits for the one before it to be answered, graded and learned from (workers and batch mode do not apply; the arms run side by side)",
		strings.Join(m.Rows(), ", "), m.opts.Seed)
}

func memKey(chain, rest string) string { return MemoryMeta + "/" + chain + "/" + rest }

func memStepKey(chain string, pos int) string { return memKey(chain, fmt.Sprintf("step/%08d", pos)) }

func load[T any](ctx context.Context, store memory.MetaReader, key string) (v T, ok bool, err error) {
	raw, ok, err := store.Meta(ctx, key)
	if err != nil || !ok {
		return v, false, err
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return v, false, fmt.Errorf("reading %s: %w", key, err)
	}
	return v, true, nil
}

// MemorySteps returns the steps chain has recorded, in order.
func MemorySteps(ctx context.Context, store memory.MetaReader, chain string) ([]MemoryStep, error) {
	var out []MemoryStep
	for pos := 1; ; pos++ {
		st, ok, err := load[MemoryStep](ctx, store, memStepKey(chain, pos))
		if err != nil || !ok {
			return out, err
		}
		out = append(out, st)
	}
}

// MemoryStage names the memory arm where failures are reported and
// retried ('ac3 retry --stage lic-memory').
const MemoryStage = "lic-memory"

// MetaStore is memory.MetaStore with keys removed (*ledger.Ledger).
type MetaStore interface {
	memory.MetaStore
	DeleteMeta(ctx context.Context, keys ...string) error
}

// FailedSteps returns the failed steps of the run's current memory chains
// (MemoryStep.Failed), chain by chain in order.
func FailedSteps(ctx context.Context, store memory.MetaReader) ([]MemoryStep, error) {
	all, err := MemoryResults(ctx, store)
	if err != nil {
		return nil, err
	}
	var out []MemoryStep
	for _, st := range all {
		if st.Failed {
			out = append(out, st)
		}
	}
	return out, nil
}

// RequeueFailed drops, in each of the run's memory chains, the steps from
// its first failed one on (the later ones learned from a cheatsheet the
// failed step did not update), so the next run takes them again; it
// returns how many failed steps it dropped.
func RequeueFailed(ctx context.Context, store MetaStore) (int, error) {
	chains, _, err := load[[]MemoryChain](ctx, store, MemoryMeta)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range chains {
		steps, err := MemorySteps(ctx, store, c.ID)
		if err != nil {
			return n, err
		}
		first := slices.IndexFunc(steps, func(st MemoryStep) bool { return st.Failed })
		if first < 0 {
			continue
		}
		var keys []string
		for _, st := range steps[first:] {
			if st.Failed {
				n++
			}
			keys = append(keys, memStepKey(c.ID, st.Pos))
		}
		if err := store.DeleteMeta(ctx, keys...); err != nil {
			return n, err
		}
	}
	return n, nil
}

// MemoryResults returns, for the run's current memory chains, every
// recorded step, chain by chain in order; the report folds their grades
// into rows named by MemoryStep.Row.
func MemoryResults(ctx context.Context, store memory.MetaReader) ([]MemoryStep, error) {
	chains, _, err := load[[]MemoryChain](ctx, store, MemoryMeta)
	if err != nil {
		return nil, err
	}
	var out []MemoryStep
	for _, c := range chains {
		st, err := MemorySteps(ctx, store, c.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, st...)
	}
	return out, nil
}

// MemoryCheatsheet returns the text of a chain's cheatsheet by hash.
func MemoryCheatsheet(ctx context.Context, store memory.MetaReader, chain, hash string) (string, error) {
	if hash == "" {
		return "", nil
	}
	text, ok, err := store.Meta(ctx, memKey(chain, "sheet/"+hash))
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("reading lic memory %s: cheatsheet %s is missing", chain, hash)
	}
	return text, nil
}

// Run replays items (the pool's trajectories, in any order) through every
// chain, resuming each at its first unrecorded instance; load reads a
// trajectory. done is false when Stop ended it early.
func (m *MemoryArm) Run(ctx context.Context, items []Item, load func(context.Context, Item) (*conv.Conversation, error)) (done bool, err error) {
	if m.opts.Store == nil {
		return false, errors.New("running the lic memory arm: no run to record it in")
	}
	b, err := json.Marshal(m.chains)
	if err != nil {
		return false, err
	}
	if err := m.opts.Store.SetMeta(ctx, MemoryMeta, string(b)); err != nil {
		return false, err
	}
	order := Order(items, m.opts.Seed)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		all  = true
	)
	for _, ch := range m.chains {
		wg.Go(func() {
			ok, err := m.runChain(ctx, ch, order, load)
			mu.Lock()
			defer mu.Unlock()
			all = all && ok
			if err != nil {
				errs = append(errs, fmt.Errorf("lic memory arm %s: %w", ch.Row, err))
			}
		})
	}
	wg.Wait()
	return all && len(errs) == 0, errors.Join(errs...)
}

func (m *MemoryArm) logf(format string, args ...any) {
	if m.opts.Log != nil {
		fmt.Fprintf(m.opts.Log, format, args...)
	}
}

// runChain takes ch from its last recorded step to the end of order.
func (m *MemoryArm) runChain(ctx context.Context, ch MemoryChain, order []Item, load func(context.Context, Item) (*conv.Conversation, error)) (bool, error) {
	done, err := MemorySteps(ctx, m.opts.Store, ch.ID)
	if err != nil {
		return false, err
	}
	if len(done) > len(order) {
		return false, fmt.Errorf("chain %s has %d steps recorded but the pool has %d trajectories", ch.ID, len(done), len(order))
	}
	head := ""
	for i, st := range done {
		if st.Conv != order[i].ID {
			return false, fmt.Errorf("chain %s: step %d was %s, but the order now gives %s (the pool changed: use a new run file)", ch.ID, i+1, st.Conv, order[i].ID)
		}
		head = st.After
	}
	text, err := MemoryCheatsheet(ctx, m.opts.Store, ch.ID, head)
	if err != nil {
		return false, err
	}
	for pos := len(done) + 1; pos <= len(order); pos++ {
		if m.opts.Stop != nil && m.opts.Stop() {
			m.logf("lic memory %s: stopped before instance %d of %d; the next run resumes there\n", ch.Row, pos, len(order))
			return false, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		it := order[pos-1]
		c, err := load(ctx, it)
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", it.ID, err)
		}
		st, next, err := m.step(ctx, ch, c, text)
		if err != nil {
			return false, fmt.Errorf("replaying %s with memory: %w", it.ID, err)
		}
		st.Pos, st.Seq, st.Conv, st.Row = pos, it.Seq, it.ID, ch.Row
		// The cheatsheet's text first, then the step that names it, in one
		// write: a step on record always points at stored text.
		if st.After != st.Before {
			if err := m.opts.Store.SetMeta(ctx, memKey(ch.ID, "sheet/"+st.After), next); err != nil {
				return false, err
			}
		}
		b, err := json.Marshal(st)
		if err != nil {
			return false, err
		}
		if err := m.opts.Store.SetMeta(ctx, memStepKey(ch.ID, pos), string(b)); err != nil {
			return false, err
		}
		text = next
		m.logf("lic memory %s: %d/%d %s: %s; cheatsheet %d words\n", ch.Row, pos, len(order), it.ID, st.Outcome, st.Words)
	}
	return true, nil
}

// step replays one instance under cheatsheet and learns from its outcome.
// A unit failure (a malformed analysis, a rejected request) is recorded as
// a step that teaches nothing; other errors stop the chain unrecorded.
func (m *MemoryArm) step(ctx context.Context, ch MemoryChain, c *conv.Conversation, cheatsheet string) (MemoryStep, string, error) {
	before := analyze.MemoryHash(cheatsheet)
	st := MemoryStep{Before: before, After: before, Words: wordCount(cheatsheet), Turn: c.UserTurns()}
	in, err := grade.ParseInstance(c.Meta)
	if err != nil {
		return st, "", err
	}
	st.Instance, st.Task = in.TaskID, in.Task
	skip := func(why string) (MemoryStep, string, error) {
		st.Skipped, st.Outcome = why, "not graded: "+why
		return st, cheatsheet, nil
	}
	fail := func(why string) (MemoryStep, string, error) {
		st.Failed = true
		return skip(why)
	}
	co := m.opts.Curate
	hash := before
	if hash == "" {
		hash = "none"
	}
	co.Memory = memory.Memory{Cheatsheet: cheatsheet, Hash: "online:" + hash}
	op, err := curate.ByName(strings.TrimSuffix(ch.Row, MemorySuffix), co)
	if err != nil {
		return st, "", err
	}
	from := max(c.UserTurns()-m.opts.LastTurns+1, 1)
	xs, err := op.Contexts(ctx, c, from, curate.NewWorkspace(c, m.opts.Counter))
	if errors.Is(err, llm.ErrDeferred) {
		return st, "", errors.New("the memory arm cannot wait for batches: run it without batch mode")
	}
	for _, x := range xs {
		st.Usage.Add(x.Info.Usage())
	}
	var te *curate.TurnError
	if errors.As(err, &te) {
		return fail(fmt.Sprintf("curating failed: %v", err))
	}
	if err != nil {
		return st, "", err
	}
	if len(xs) == 0 || xs[len(xs)-1].Turn != st.Turn {
		return skip("no context of the final turn")
	}
	final := xs[len(xs)-1]
	msgs, err := final.MaterializeChecked(c)
	if err != nil {
		return st, "", err
	}
	answers, err := m.answer(ctx, msgs)
	if err != nil {
		if _, failed := llm.UnitFailure(err); failed {
			return fail(fmt.Sprintf("answering failed: %v", err))
		}
		return st, "", err
	}
	passed, graded := 0, 0
	for i, a := range answers {
		r, err := m.opts.Grader.Grade(ctx, in, a)
		if errors.Is(err, grade.ErrBadInstance) {
			r, err = grade.Result{Task: in.Task, Status: grade.NotGraded, Reason: err.Error()}, nil
		}
		if err != nil {
			return st, "", err
		}
		st.Reruns = append(st.Reruns, Graded{Index: i, Grade: r})
		switch r.Status {
		case grade.Pass:
			passed++
			graded++
		case grade.Fail:
			graded++
		}
	}
	st.Outcome = outcome(st.Reruns, passed, graded)
	// The trajectory reflection reads: the analyzed turns, the operator's
	// decision, the answer given at the final turn and how it was graded.
	var turns []analyze.TurnAnalysis
	edits := map[int]bool{}
	for _, x := range xs {
		if x.Info.Analyzed {
			turns = append(turns, analyze.TurnAnalysis{Turn: x.Turn, Analysis: x.Info.Analysis})
			edits[x.Turn] = x.Info.Action == curated.ActionReset || x.Info.Action == curated.ActionRewrite
		}
	}
	if len(turns) == 0 {
		st.Skipped = "the operator analyzed no turn"
		return st, cheatsheet, nil
	}
	steps := analyze.Steps(c, turns, func(t analyze.TurnAnalysis) bool { return edits[t.Turn] })
	if last := &steps[len(steps)-1]; last.Turn == st.Turn {
		last.Reply = clipRunes(answers[0], analyze.MaxStepChars)
		last.Outcome = st.Outcome
	}
	next, takeaways, use, err := m.opts.Curate.Analyzer.Absorb(ctx, analyze.Trajectory{Steps: steps, Outcome: st.Outcome}, cheatsheet)
	st.Usage.Add(use)
	st.Takeaways = takeaways
	if err != nil {
		if _, failed := analyze.Failure(err); failed {
			st.Skipped, st.Failed = fmt.Sprintf("updating the cheatsheet failed: %v", err), true
			return st, cheatsheet, nil
		}
		return st, "", err
	}
	st.After, st.Words = analyze.MemoryHash(next), wordCount(next)
	return st, next, nil
}

// outcome says how an instance fared, as the reflection reads it.
func outcome(rs []Graded, passed, graded int) string {
	switch {
	case graded == 0:
		why := "no answer could be graded"
		if len(rs) > 0 && rs[0].Grade.Reason != "" {
			why = rs[0].Grade.Reason
		}
		return "not graded: " + why
	case passed == graded:
		return fmt.Sprintf("correct (%d of %d answers graded correct)", passed, graded)
	case passed == 0:
		why := ""
		for _, r := range rs {
			if r.Grade.Status == grade.Fail && r.Grade.Reason != "" {
				why = ": " + r.Grade.Reason
				break
			}
		}
		return fmt.Sprintf("incorrect (0 of %d answers graded correct)%s", graded, why)
	default:
		return fmt.Sprintf("partly correct (%d of %d answers graded correct)", passed, graded)
	}
}

// answer asks the respondent for the arm's M answers, as the respond stage
// asks (same role, stage, messages and sample indexes), so the run's cache
// serves the same request once.
func (m *MemoryArm) answer(ctx context.Context, msgs []conv.Message) ([]string, error) {
	out := make([]string, m.opts.Reruns)
	errs := make([]error, m.opts.Reruns)
	var wg sync.WaitGroup
	for i := range m.opts.Reruns {
		wg.Go(func() {
			req := llm.Request{Role: cmp.Or(m.opts.Respondent, respond.DefaultRole), Stage: respond.StageName, Messages: msgs, SampleIndex: i}
			out[i], _, errs[i] = llm.CallParsed(ctx, m.opts.Client, req, m.opts.Retries, func(r llm.Response) (string, error) {
				if strings.TrimSpace(r.Text) == "" {
					return "", errors.New("empty answer")
				}
				return r.Text, nil
			})
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("\n[... %d more characters not shown]", len(r)-n)
}

func wordCount(s string) int { return len(strings.Fields(s)) }
