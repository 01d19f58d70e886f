package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/stats"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/replay"
	"github.com/ac3/ac3/stages/lic/simulate"
)

// AccuracySchema names the layout of accuracy.json.
const AccuracySchema = "ac3.accuracy/v2"

// AccuracyOptions configure the accuracy section of a LiC replay.
type AccuracyOptions struct {
	Level float64 // Wilson interval level (default 0.95)
	// FC and AO are the strategies gap closure and the paired tests are
	// measured against (defaults "fc" and "ao"). A respondent label
	// (strategy@label) pairs with the reference of the same label.
	FC, AO string
	// MinFailures is the difficulty selection the pool was drawn with
	// (simulate.Pool), reported with the pool.
	MinFailures int
	// UnscoredFail counts an answer that could not be graded as a failed
	// one (lic.unscored: failure, B.1.4's conservative end) instead of
	// leaving it out of n.
	UnscoredFail bool
	// TaskReplicates are the tasks run with their own number of baseline
	// replicates (lic.task_replicates): replicates past it are not counted.
	TaskReplicates map[string]int
	// MaxPerTask is the cap on the pool per task (the most-failed first),
	// 0 for none.
	MaxPerTask int
	// FNCheck says whether the false-negative check was applied.
	FNCheck bool
	// Grader is the grader's fingerprint (which databases the SQL ran on,
	// whether code ran), printed with the table.
	Grader string
	// Traces is which trajectories of an instance were replayed
	// (simulate.TracesOne, also "", or TracesAll), said in the notes.
	Traces string
	// Resamples and Seed drive the problem-clustered bootstrap of the
	// gains (defaults 2000 and 0).
	Resamples int
	Seed      uint64
	PageSize  int
}

// Accuracy is the accuracy section of a LiC replay: the pool each task
// ended with, accuracy per task × strategy, and the analyzer's answer leak
// on math. Its JSON form is accuracy.json.
type Accuracy struct {
	Schema string         `json:"schema"`
	Run    string         `json:"run"`
	Level  Num            `json:"level"`
	Grader string         `json:"grader"`
	FC     string         `json:"fc"`
	AO     string         `json:"ao"`
	Pool   []PoolRow      `json:"pool"`
	Cells  []AccuracyCell `json:"cells"`
	Leak   []LeakRow      `json:"leak,omitempty"`
	Notes  []string       `json:"notes"`
	// MemoryFailed counts the memory arm's steps whose call failed: their
	// answers are missing from the memory rows until they are retried.
	MemoryFailed int `json:"memory_failed,omitempty"`
	settings     AccuracyOptions
}

// PoolRow says, for one task, how the replay pool was drawn.
type PoolRow struct {
	Task      string `json:"task"`
	Instances int    `json:"instances"` // LiC records simulated
	// BaselineGraded and BaselinePassed count the simulated trajectories
	// whose final answer was graded, and passed.
	BaselineGraded int `json:"baseline_graded"`
	BaselinePassed int `json:"baseline_passed"`
	Selected       int `json:"selected"` // instances failing in at least MinFailures replicates (before any cap)
	Flagged        int `json:"flagged"`  // of those, flagged by the false-negative check
	Pool           int `json:"pool"`     // instances replayed
	Trajectories   int `json:"trajectories"`
}

// AccuracyCell is one task × strategy cell. An item is one replayed
// trajectory, an instance the LiC problem it came from (one trajectory each
// when the paper's one trace is replayed); each item was answered Reruns
// times.
//
// The instance is the unit of the statistics the paper reports:
// InstanceAccuracy is the mean over instances of each one's share of
// passing answers, with a Wilson interval on the instance count; Mean and
// SD are over the reruns' accuracies (SD with n − 1; unknown with one
// rerun); GainVsFC is the mean per-instance gain over the reference with a
// bootstrap interval that resamples instances; InstVsFC and InstVsAO are
// exact McNemar tests pairing each instance's headline answer (its first
// trajectory's first rerun) with the reference's.
//
// Accuracy, Interval, VsFC and VsAO pool every graded answer (Passes / N)
// and so count the reruns and trajectories of one instance as independent
// answers: they are correlated, and those intervals and p-values are too
// optimistic, which the notes say beside them.
type AccuracyCell struct {
	Task     string `json:"task"`
	Strategy string `json:"strategy"`
	Items    int    `json:"items"`
	Reruns   int    `json:"reruns"`
	N        int    `json:"n"`
	Passes   int    `json:"passes"`
	Ungraded int    `json:"ungraded"`
	// UnscoredFailed counts the answers that were not graded and are
	// counted as failures (AccuracyOptions.UnscoredFail).
	UnscoredFailed int      `json:"unscored_failed,omitempty"`
	Accuracy       Num      `json:"accuracy"`
	Interval       Interval `json:"interval"`
	Mean           Num      `json:"mean"`
	SD             Num      `json:"sd"`
	GapClosure     Num      `json:"gap_closure"`
	VsFC           *Paired  `json:"vs_fc,omitempty"`
	VsAO           *Paired  `json:"vs_ao,omitempty"`

	Instances        int      `json:"instances"`
	InstanceAccuracy Num      `json:"instance_accuracy"`
	InstanceInterval Interval `json:"instance_interval"`
	GainVsFC         *Gain    `json:"gain_vs_fc,omitempty"`
	InstVsFC         *Paired  `json:"instance_vs_fc,omitempty"`
	InstVsAO         *Paired  `json:"instance_vs_ao,omitempty"`
}

// Gain is a strategy's accuracy gain over a reference on the instances both
// answered: the mean of the per-instance differences in the share of
// passing answers, with its problem-clustered bootstrap interval.
type Gain struct {
	Instances int      `json:"instances"`
	Mean      Num      `json:"mean"`
	Interval  Interval `json:"interval"`
}

// Paired is an exact McNemar test of a strategy against a reference on the
// same items and reruns: Better counts pairs the strategy got right and the
// reference wrong, Worse the reverse.
type Paired struct {
	Pairs  int `json:"pairs"`
	Better int `json:"better"`
	Worse  int `json:"worse"`
	P      Num `json:"p"`
}

// LeakRow is the analyzer's answer leak on math for one strategy: the
// share of its analyses at the replayed turns that contain the reference
// answer (as a number anywhere in the text).
type LeakRow struct {
	Strategy string `json:"strategy"`
	Analyses int    `json:"analyses"`
	Leaks    int    `json:"leaks"`
	Rate     Num    `json:"rate"`
	// LeakFree pairs the strategy's answers with fc's on the items whose
	// analysis at the replayed turn holds no reference answer (§5.1's
	// gain "on the rest"): Items of them, Gain the mean over those items
	// of the strategy's accuracy less fc's, VsFC an exact McNemar test
	// over the paired answers (reruns counted as independent).
	LeakFree struct {
		Items int     `json:"items"`
		Gain  Num     `json:"gain"`
		VsFC  *Paired `json:"vs_fc,omitempty"`
	} `json:"leak_free"`
	gainSum float64
}

// cellAcc folds one cell.
type cellAcc struct {
	items, ungraded int
	unscoredFailed  int
	reruns          map[int][2]int // rerun index → passes, graded
	vsFC, vsAO      Paired
	hasFC, hasAO    bool
	maxReruns       int
	task, strategy  string
	passes, n       int
	order           int
	inst            map[string]*instAcc // by instance (the LiC task id)
}

// instAcc is one instance's answers in a cell.
type instAcc struct {
	passes, graded int
	head           grade.Status // the first trajectory's first rerun
	headSeq        int64
}

// BuildAccuracy folds the run's LiC replay into its accuracy section, a
// page of conversations at a time: the simulate and check units of the
// ingested records for the pool, the lic-grade units of the trajectories
// for the cells, the curate units of math trajectories for the leak.
func BuildAccuracy(ctx context.Context, src Source, opts AccuracyOptions) (*Accuracy, error) {
	opts.Level = cmp.Or(opts.Level, 0.95)
	opts.FC, opts.AO = cmp.Or(opts.FC, "fc"), cmp.Or(opts.AO, "ao")
	plans, err := src.Plans(ctx)
	if err != nil {
		return nil, err
	}
	a := &Accuracy{Schema: AccuracySchema, Level: Num(opts.Level), Grader: opts.Grader, FC: opts.FC, AO: opts.AO, settings: opts}
	if p := src.Path(); p != "" {
		a.Run = baseName(p)
	}
	pools := map[string]*PoolRow{}
	pool := func(task string) *PoolRow {
		if pools[task] == nil {
			pools[task] = &PoolRow{Task: task}
		}
		return pools[task]
	}
	cells := map[[2]string]*cellAcc{}
	gradeOrder := map[string]int{}
	for i, v := range plans[replay.StageName] {
		gradeOrder[v.Name] = i
	}
	mem, err := memoryRows(ctx, src, gradeOrder)
	if err != nil {
		return nil, err
	}
	for _, steps := range mem {
		for _, st := range steps {
			if st.Failed {
				a.MemoryFailed++
			}
		}
	}
	leaks := map[string]*LeakRow{}
	var leakOrder []string
	err = src.EachPage(ctx, cmp.Or(opts.PageSize, 512), func(page []ledger.Stored, after, upto int64) error {
		var src0, sims []ledger.Stored
		for _, s := range page {
			switch s.Origin {
			case ledger.OriginSource:
				src0 = append(src0, s)
			case simulate.Origin:
				sims = append(sims, s)
			}
		}
		if len(src0) > 0 {
			if err := foldPool(ctx, src, plans, after, upto, opts, pool); err != nil {
				return err
			}
		}
		if len(sims) > 0 {
			leaked, err := foldLeak(ctx, src, plans, sims, after, upto, leaks, &leakOrder)
			if err != nil {
				return err
			}
			if err := foldCells(ctx, src, plans, sims, after, upto, opts, cells, gradeOrder, pool, mem, leaks, leaked); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("building the accuracy section: %w", err)
	}
	for _, t := range sortTasks(pools) {
		a.Pool = append(a.Pool, *pools[t])
	}
	a.finish(cells, opts)
	for _, s := range leakOrder {
		r := leaks[s]
		r.Rate = ratio(int64(r.Leaks), r.Analyses)
		r.LeakFree.Gain = ratio(0, 0)
		if r.LeakFree.Items > 0 {
			r.LeakFree.Gain = Num(r.gainSum / float64(r.LeakFree.Items))
		}
		if p := r.LeakFree.VsFC; p != nil {
			p.P = Num(stats.McNemarExact(p.Better, p.Worse))
		}
		a.Leak = append(a.Leak, *r)
	}
	a.notes(opts)
	return a, nil
}

// taskOrder puts the four graded tasks first, in the paper's order.
func taskOrder(t string) int {
	switch t {
	case grade.TaskMath:
		return 0
	case grade.TaskCode:
		return 1
	case grade.TaskDatabase:
		return 2
	case grade.TaskActions:
		return 3
	}
	return 4
}

func sortTasks[V any](m map[string]V) []string {
	ts := sortedKeys(m)
	slices.SortStableFunc(ts, func(a, b string) int { return cmp.Compare(taskOrder(a), taskOrder(b)) })
	return ts
}

func foldPool(ctx context.Context, src Source, plans map[string][]ledger.Variant, after, upto int64, opts AccuracyOptions, pool func(string) *PoolRow) error {
	type inst struct {
		task          string
		fails, graded int
		passed        int
		skipped       bool
		n             int
	}
	byConv := map[int64]*inst{}
	err := src.Units(ctx, simulate.StageName, plans[simulate.StageName], after, upto, func(u ledger.Unit) error {
		if u.Status != ledger.Done {
			return nil
		}
		tr, err := simulate.Decode(u.Output)
		if err != nil {
			return err
		}
		if tr.Uncounted(opts.TaskReplicates) {
			return nil
		}
		in := byConv[u.ConvSeq]
		if in == nil {
			in = &inst{}
			byConv[u.ConvSeq] = in
		}
		if tr.Skipped != "" {
			in.skipped = true
			return nil
		}
		in.task, in.n = tr.Task, in.n+1
		if tr.Grade != nil && tr.Grade.Status != grade.NotGraded {
			in.graded++
			if tr.Failed() {
				in.fails++
			} else {
				in.passed++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	flagged := map[int64]bool{}
	err = src.Units(ctx, simulate.FNStageName, plans[simulate.FNStageName], after, upto, func(u ledger.Unit) error {
		if u.Status != ledger.Done {
			return nil
		}
		var v simulate.Verdict
		if err := json.Unmarshal(u.Output, &v); err != nil {
			return err
		}
		flagged[u.ConvSeq] = v.Flagged()
		return nil
	})
	if err != nil {
		return err
	}
	for seq, in := range byConv {
		if in.skipped || in.task == "" {
			continue
		}
		r := pool(in.task)
		r.Instances++
		r.BaselineGraded += in.graded
		r.BaselinePassed += in.passed
		if in.fails >= opts.MinFailures {
			r.Selected++
			if flagged[seq] {
				r.Flagged++
			}
		}
	}
	return nil
}

// memoryRows reads the memory arm's steps (replay.MemoryArm), which the
// run keeps in its settings rather than as units, by trajectory seq; their
// rows come after the plan's.
func memoryRows(ctx context.Context, src Source, order map[string]int) (map[int64][]replay.MemoryStep, error) {
	ms, ok := src.(metaSource)
	if !ok {
		return nil, nil
	}
	steps, err := replay.MemoryResults(ctx, ms)
	if err != nil {
		return nil, err
	}
	out := map[int64][]replay.MemoryStep{}
	for _, st := range steps {
		if _, ok := order[st.Row]; !ok {
			order[st.Row] = len(order)
		}
		out[st.Seq] = append(out[st.Seq], st)
	}
	return out, nil
}

func foldCells(ctx context.Context, src Source, plans map[string][]ledger.Variant, sims []ledger.Stored, after, upto int64, opts AccuracyOptions, cells map[[2]string]*cellAcc, order map[string]int, pool func(string) *PoolRow, mem map[int64][]replay.MemoryStep, leaks map[string]*LeakRow, leaked map[int64]map[string]bool) error {
	// last is each trajectory's replayed final turn, instance the LiC
	// problem it was simulated from.
	last := map[int64]int{}
	instance := map[int64]string{}
	for _, s := range sims {
		last[s.Seq] = s.Conv.UserTurns()
		// simulate.TrajectoryID appends "#r<n>" to the instance's id, which
		// may itself hold a '#'.
		id := s.Conv.ID
		if i := strings.LastIndex(id, "#"); i >= 0 {
			id = id[:i]
		}
		instance[s.Seq] = id
	}
	type answers map[string][]grade.Status // strategy → status by rerun index
	byConv := map[int64]answers{}
	tasks := map[int64]string{}
	err := src.Units(ctx, replay.StageName, plans[replay.StageName], after, upto, func(u ledger.Unit) error {
		if u.Status != ledger.Done || u.Turn != last[u.ConvSeq] {
			return nil
		}
		o, err := replay.Decode(u.Output)
		if err != nil {
			return err
		}
		if byConv[u.ConvSeq] == nil {
			byConv[u.ConvSeq] = answers{}
		}
		st := make([]grade.Status, 0, len(o.Reruns))
		for _, g := range o.Reruns {
			for len(st) <= g.Index {
				st = append(st, "")
			}
			st[g.Index] = g.Grade.Status
		}
		byConv[u.ConvSeq][u.Variant] = st
		tasks[u.ConvSeq] = o.Task
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range sims {
		for _, m := range mem[s.Seq] {
			if m.Turn != last[s.Seq] {
				continue
			}
			st := []grade.Status{grade.NotGraded} // a step that was not answered
			if len(m.Reruns) > 0 {
				st = make([]grade.Status, 0, len(m.Reruns))
			}
			for _, g := range m.Reruns {
				for len(st) <= g.Index {
					st = append(st, "")
				}
				st[g.Index] = g.Grade.Status
			}
			if byConv[s.Seq] == nil {
				byConv[s.Seq] = answers{}
			}
			byConv[s.Seq][m.Row] = st
			tasks[s.Seq] = m.Task
		}
	}
	// Every pooled instance has its replayed trace(s), whichever page they
	// are on.
	for _, s := range sims {
		in, err := grade.ParseInstance(s.Conv.Meta)
		if err != nil || in.Task == "" {
			continue
		}
		pool(in.Task).Trajectories++
		// One trace per instance is replayed (whichever replicate failed
		// first), or every replicate: then the first stands for the
		// instance.
		if opts.Traces != simulate.TracesAll || strings.HasSuffix(s.Conv.ID, "#"+simulate.Replicate(1)) {
			pool(in.Task).Pool++
		}
	}
	// With UnscoredFail every figure, the paired ones included, reads an
	// ungraded answer as failed (the statuses are this fold's copies).
	unscored := map[int64]map[string]int{}
	for seq, byStrategy := range byConv {
		for strategy, st := range byStrategy {
			for i := range st {
				if opts.UnscoredFail && st[i] == grade.NotGraded {
					st[i] = grade.Fail
					if unscored[seq] == nil {
						unscored[seq] = map[string]int{}
					}
					unscored[seq][strategy]++
				}
			}
		}
	}
	for seq, byStrategy := range byConv {
		task := tasks[seq]
		for strategy, st := range byStrategy {
			k := [2]string{task, strategy}
			c := cells[k]
			if c == nil {
				c = &cellAcc{task: task, strategy: strategy, reruns: map[int][2]int{}, order: order[strategy], inst: map[string]*instAcc{}}
				cells[k] = c
			}
			c.unscoredFailed += unscored[seq][strategy]
			c.items++
			in := c.inst[instance[seq]]
			if in == nil {
				in = &instAcc{headSeq: seq}
				c.inst[instance[seq]] = in
			}
			if seq <= in.headSeq && len(st) > 0 {
				in.head, in.headSeq = st[0], seq
			}
			c.maxReruns = max(c.maxReruns, len(st))
			for i, s := range st {
				switch s {
				case grade.Pass, grade.Fail:
					r := c.reruns[i]
					r[1]++
					c.n++
					in.graded++
					if s == grade.Pass {
						r[0]++
						c.passes++
						in.passes++
					}
					c.reruns[i] = r
				default:
					c.ungraded++
				}
			}
			pair := func(ref string, p *Paired, has *bool) {
				rs, ok := byStrategy[withLabel(ref, strategy)]
				if !ok || withLabel(ref, strategy) == strategy {
					return
				}
				*has = true
				p.add(st, rs)
			}
			pair(opts.FC, &c.vsFC, &c.hasFC)
			pair(opts.AO, &c.vsAO, &c.hasAO)
			// The analysis is the curate variant's, the strategy without
			// its respondent label.
			base, _, _ := strings.Cut(strategy, "@")
			if l, ok := leaked[seq][base]; ok && !l && leaks[base] != nil && withLabel(opts.FC, strategy) != strategy {
				leakFree(leaks[base], st, byStrategy[withLabel(opts.FC, strategy)])
			}
		}
	}
	return nil
}

// leakFree adds one leak-free item to r: its answers st and fc's ref, by
// rerun. An item with no graded pair is left out.
func leakFree(r *LeakRow, st, ref []grade.Status) {
	if r.LeakFree.VsFC == nil {
		r.LeakFree.VsFC = &Paired{}
	}
	// Over an item's graded pairs, its accuracy less fc's is the share of
	// pairs it won less the share it lost.
	if n, net := r.LeakFree.VsFC.add(st, ref); n > 0 {
		r.LeakFree.Items++
		r.gainSum += float64(net) / float64(n)
	}
}

// add counts the pairs of graded answers of st and ref, rerun by rerun,
// into p; it returns how many there were and how many more of them st won
// than lost.
func (p *Paired) add(st, ref []grade.Status) (pairs, net int) {
	for i := range min(len(st), len(ref)) {
		a, b := st[i], ref[i]
		if (a != grade.Pass && a != grade.Fail) || (b != grade.Pass && b != grade.Fail) {
			continue
		}
		pairs++
		switch {
		case a == grade.Pass && b == grade.Fail:
			net++
			p.Better++
		case a == grade.Fail && b == grade.Pass:
			net--
			p.Worse++
		}
	}
	p.Pairs += pairs
	return pairs, net
}

// withLabel is reference strategy ref answered by the same respondent as
// variant v (strategy@label).
func withLabel(ref, v string) string {
	if _, label, ok := strings.Cut(v, "@"); ok {
		return ref + "@" + label
	}
	return ref
}

var numberRE = regexp.MustCompile(`[-+]?\$?\d[\d,]*(?:\.\d+)?`)

// containsNumber reports whether text holds want as a number.
func containsNumber(text string, want float64) bool {
	for _, m := range numberRE.FindAllString(text, -1) {
		if n, ok := grade.ParseNumber(m); ok && grade.SameNumber(n.Value, want) {
			return true
		}
	}
	return false
}

// It returns, per math trajectory and strategy, whether the analysis at
// the replayed final turn held the answer (absent: no analysis there).
func foldLeak(ctx context.Context, src Source, plans map[string][]ledger.Variant, sims []ledger.Stored, after, upto int64, leaks map[string]*LeakRow, order *[]string) (map[int64]map[string]bool, error) {
	refs := map[int64]float64{}
	last := map[int64]int{}
	leaked := map[int64]map[string]bool{}
	for _, s := range sims {
		last[s.Seq] = s.Conv.UserTurns()
		in, err := grade.ParseInstance(s.Conv.Meta)
		if err != nil || in.Task != grade.TaskMath {
			continue
		}
		if n, ok := grade.GSM8KAnswer(in.Answer); ok {
			refs[s.Seq] = n.Value
		}
	}
	if len(refs) == 0 {
		return leaked, nil
	}
	err := src.Units(ctx, curate.StageName, plans[curate.StageName], after, upto, func(u ledger.Unit) error {
		ref, ok := refs[u.ConvSeq]
		if !ok || u.Status != ledger.Done {
			return nil
		}
		x, err := curated.DecodeContext(u.Output)
		if err != nil {
			return err
		}
		if !x.Info.Analyzed {
			return nil
		}
		r := leaks[u.Variant]
		if r == nil {
			r = &LeakRow{Strategy: u.Variant}
			leaks[u.Variant] = r
			*order = append(*order, u.Variant)
		}
		r.Analyses++
		an := x.Info.Analysis
		has := containsNumber(an.Spec+"\n"+an.Aligned+"\n"+an.Issues, ref)
		if has {
			r.Leaks++
		}
		if u.Turn == last[u.ConvSeq] {
			if leaked[u.ConvSeq] == nil {
				leaked[u.ConvSeq] = map[string]bool{}
			}
			leaked[u.ConvSeq][u.Variant] = has
		}
		return nil
	})
	return leaked, err
}

func (a *Accuracy) finish(cells map[[2]string]*cellAcc, opts AccuracyOptions) {
	keys := make([][2]string, 0, len(cells))
	for k := range cells {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y [2]string) int {
		return cmp.Or(cmp.Compare(taskOrder(x[0]), taskOrder(y[0])), cmp.Compare(x[0], y[0]),
			cmp.Compare(cells[x].order, cells[y].order), cmp.Compare(x[1], y[1]))
	})
	acc := func(task, strategy string) Num {
		c := cells[[2]string{task, strategy}]
		if c == nil {
			return Num(math.NaN())
		}
		return ratio(int64(c.passes), c.n)
	}
	for _, k := range keys {
		c := cells[k]
		out := AccuracyCell{Task: c.task, Strategy: c.strategy, Items: c.items, Reruns: c.maxReruns, N: c.n, Passes: c.passes, Ungraded: c.ungraded, UnscoredFailed: c.unscoredFailed}
		out.Accuracy = ratio(int64(c.passes), c.n)
		out.Interval = interval(stats.Wilson(float64(c.passes), c.n, opts.Level))
		var rates []float64
		for i := range c.maxReruns {
			if r := c.reruns[i]; r[1] > 0 {
				rates = append(rates, float64(r[0])/float64(r[1]))
			}
		}
		out.Mean, out.SD = meanSD(rates)
		fc, ao := acc(c.task, withLabel(opts.FC, c.strategy)), acc(c.task, withLabel(opts.AO, c.strategy))
		out.GapClosure = Num(math.NaN())
		if fc.Known() && ao.Known() && out.Accuracy.Known() && ao != fc {
			out.GapClosure = (out.Accuracy - fc) / (ao - fc)
		}
		if c.hasFC {
			p := c.vsFC
			p.P = Num(stats.McNemarExact(p.Better, p.Worse))
			out.VsFC = &p
		}
		if c.hasAO {
			p := c.vsAO
			p.P = Num(stats.McNemarExact(p.Better, p.Worse))
			out.VsAO = &p
		}
		a.instanceStats(&out, c, cells, opts)
		a.Cells = append(a.Cells, out)
	}
}

// instanceStats fills the cell's instance-level figures: the instance is the
// unit, whatever the reruns and trajectories per instance.
func (a *Accuracy) instanceStats(out *AccuracyCell, c *cellAcc, cells map[[2]string]*cellAcc, opts AccuracyOptions) {
	rate := func(in *instAcc) (float64, bool) {
		if in == nil || in.graded == 0 {
			return 0, false
		}
		return float64(in.passes) / float64(in.graded), true
	}
	ids := sortedKeys(c.inst)
	var sum float64
	for _, id := range ids {
		if r, ok := rate(c.inst[id]); ok {
			sum += r
			out.Instances++
		}
	}
	out.InstanceAccuracy = Num(math.NaN())
	if out.Instances > 0 {
		out.InstanceAccuracy = Num(sum / float64(out.Instances))
	}
	out.InstanceInterval = interval(stats.Wilson(sum, out.Instances, opts.Level))
	ref := func(name string) *cellAcc {
		r := cells[[2]string{c.task, withLabel(name, c.strategy)}]
		if r == nil || r == c {
			return nil
		}
		return r
	}
	headPair := func(r *cellAcc) *Paired {
		p := &Paired{}
		for _, id := range ids {
			x, y := c.inst[id], r.inst[id]
			if y == nil || !decided(x.head) || !decided(y.head) {
				continue
			}
			p.Pairs++
			switch {
			case x.head == grade.Pass && y.head == grade.Fail:
				p.Better++
			case x.head == grade.Fail && y.head == grade.Pass:
				p.Worse++
			}
		}
		p.P = Num(stats.McNemarExact(p.Better, p.Worse))
		return p
	}
	if r := ref(opts.FC); r != nil {
		out.InstVsFC = headPair(r)
		var diffs []float64
		for _, id := range ids {
			x, okX := rate(c.inst[id])
			y, okY := rate(r.inst[id])
			if okX && okY {
				diffs = append(diffs, x-y)
			}
		}
		g := &Gain{Instances: len(diffs), Mean: Num(math.NaN())}
		if len(diffs) > 0 {
			var s float64
			for _, d := range diffs {
				s += d
			}
			g.Mean = Num(s / float64(len(diffs)))
		}
		g.Interval = interval(stats.MeanBootstrap(diffs, stats.Options{Level: opts.Level, Resamples: opts.Resamples, Seed: opts.Seed}))
		out.GainVsFC = g
	}
	if r := ref(opts.AO); r != nil {
		out.InstVsAO = headPair(r)
	}
}

func decided(s grade.Status) bool { return s == grade.Pass || s == grade.Fail }

func meanSD(xs []float64) (Num, Num) {
	if len(xs) == 0 {
		return Num(math.NaN()), Num(math.NaN())
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	if len(xs) < 2 {
		return Num(m), Num(math.NaN())
	}
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return Num(m), Num(math.Sqrt(v / float64(len(xs)-1)))
}

func (a *Accuracy) notes(opts AccuracyOptions) {
	sel := "the unselected pool: every simulated instance is replayed"
	if opts.MinFailures > 0 {
		sel = fmt.Sprintf("difficulty-selected: instances whose baseline failed in at least %d of their trajectories", opts.MinFailures)
	}
	if opts.MaxPerTask > 0 {
		sel += fmt.Sprintf(", of which the %d per task with the most failures (\"selected\" counts them before this cap)", opts.MaxPerTask)
	}
	a.Notes = append(a.Notes, "Pool: "+sel+".")
	if opts.FNCheck {
		a.Notes = append(a.Notes, "The false-negative check ran once per instance on the baseline traces; flagged instances are out of every arm.")
	} else {
		a.Notes = append(a.Notes, "No false-negative check: no instance was removed for lost information.")
	}
	if opts.Traces == simulate.TracesAll {
		a.Notes = append(a.Notes, "Traces: every baseline trajectory of an instance was replayed, passes included (lic.traces: all). Not the paper's protocol, which replays one saved failing trace per instance: the passes raise the full-context baseline and shrink its gap.")
	} else {
		a.Notes = append(a.Notes, "Traces: one saved baseline trace per instance, the first that failed (the one the false-negative check read), as the paper replays.")
	}
	a.Notes = append(a.Notes,
		"The instance is the unit: instance accuracy is the mean over instances of each one's share of passing answers, with a Wilson interval on the number of instances; mean ± sd is over the reruns' accuracies; McNemar (instances) pairs each instance's headline answer (first trajectory, first rerun) with the reference's.",
		fmt.Sprintf("Gain vs %s is the mean per-instance gain with a %s bootstrap interval that resamples instances (problems), as §5.1 computes item-level gains.", opts.FC, pct(Num(opts.Level))),
		fmt.Sprintf("‡ Pooled over answers: accuracy (items × reruns) with its Wilson interval, gap closure (S − %s) / (%s − %s), and the answer-level McNemar tests count the reruns (and trajectories) of one instance as independent answers. They are correlated, so those intervals and p-values are too narrow; use the instance columns.", opts.FC, opts.AO, opts.FC),
	)
	if opts.UnscoredFail {
		a.Notes = append(a.Notes, "Answers that were not graded (code without --allow-code-exec, tasks without a grader, an unreadable answer) count as failures (lic.unscored: failure), as B.1.4 prints its code cells: the conservative end of each cell's range.")
	} else {
		a.Notes = append(a.Notes, "Answers that were not graded (code without --allow-code-exec, tasks without a grader) are left out of n (lic.unscored: failure counts them as failures, as B.1.4 does for some code cells).")
	}
	if a.MemoryFailed > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("INCOMPLETE: %d steps of the memory arm failed (a call failed after its retries) and have no graded answer, so the memory rows lack them; 'ac3 retry --stage lic-memory' and the same command again take them anew.", a.MemoryFailed))
	}
	for _, c := range a.Cells {
		if strings.HasSuffix(c.Strategy, replay.MemorySuffix) {
			a.Notes = append(a.Notes, "Rows ending "+replay.MemorySuffix+" are the memory arm (lic.memory): the operator replayed with the online memory, the instances taken one at a time in an order drawn from a seed, the cheatsheet updated from each instance's graded outcome before the next. Their accuracy depends on that order (App. F measured ~6pp sd over four orderings); one row is one ordering.")
			break
		}
	}
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
