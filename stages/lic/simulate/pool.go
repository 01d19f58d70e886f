package simulate

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// Origin is the origin of the trajectories Trajectories derives.
const Origin = "lic-sim"

// Format is the Format of a derived trajectory conversation.
const Format = "lic-sim"

// UnitReader reads stored units of earlier stages; *ledger.Ledger
// satisfies it.
type UnitReader interface {
	ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
}

// Pool says which instances' trajectories are replayed.
type Pool struct {
	// MinFailures keeps the instances whose baseline failed in at least
	// this many of their replicates (difficulty selection); 0 keeps every
	// instance (the unselected pool). The paper keeps those failing in at
	// least 60% of five replicates: 3.
	MinFailures int
	// MaxPerTask, when above 0, keeps of those only the MaxPerTask per task
	// with the most failures (ties go to the earlier instance in the run),
	// as the paper takes the 25 with the highest error rate. Rank must run
	// first.
	MaxPerTask int
	// Check, when set, is the false-negative check's stage; instances it
	// flagged leave the pool (after the ranking, as in the paper).
	Check *FNCheck
	// Traces says which of a kept instance's trajectories are replayed:
	// TracesOne (also "") or TracesAll.
	Traces string

	keep map[int64]bool // seqs MaxPerTask keeps, from Rank
}

// Which trajectories of a pooled instance are replayed.
const (
	// TracesOne replays one saved baseline trace per instance, as the
	// paper does (App. B.1): the first that failed, the one the
	// false-negative check reads, else (an instance the baseline never
	// failed, in an unselected pool) the first. Every answer of an arm is
	// then one instance's, and the instance is the unit of the statistics.
	TracesOne = "one"
	// TracesAll replays every replicate trajectory, passes included. Not
	// the paper's: the passes raise the full-context baseline, and the
	// answers of one instance's trajectories are correlated.
	TracesAll = "all"
)

// Replayed returns the trajectories of trs the pool replays.
func (p *Pool) Replayed(trs []Trajectory) []Trajectory {
	if p.Traces == TracesAll || len(trs) == 0 {
		return trs
	}
	for i := range trs {
		if trs[i].Failed() {
			return trs[i : i+1]
		}
	}
	return trs[:1]
}

// Selected reports whether instance seq with these trajectories is in the
// pool by difficulty alone.
func (p *Pool) Selected(seq int64, trs []Trajectory) bool {
	if failures(trs) < p.MinFailures {
		return false
	}
	return p.MaxPerTask <= 0 || p.keep[seq]
}

// Pages walks the ingested records a page at a time (a ledger.View's
// EachPage).
type Pages func(ctx context.Context, size int, fn func(page []ledger.Stored, after, upto int64) error) error

// Rank finds the instances MaxPerTask keeps. It holds one small record per
// eligible instance (its seq, task and failures), never a trajectory.
func (p *Pool) Rank(ctx context.Context, pages Pages, units UnitReader, s *Stage) error {
	if p.MaxPerTask <= 0 {
		return nil
	}
	type cand struct {
		seq   int64
		fails int
	}
	byTask := map[string][]cand{}
	err := pages(ctx, 256, func(page []ledger.Stored, _, _ int64) error {
		for _, st := range page {
			trs, err := Stored(ctx, units, s, st.Conv.ID)
			if err != nil {
				return err
			}
			if len(trs) == 0 || trs[0].Skipped != "" {
				continue
			}
			if f := failures(trs); f >= p.MinFailures {
				byTask[trs[0].Task] = append(byTask[trs[0].Task], cand{st.Seq, f})
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ranking the pool: %w", err)
	}
	p.keep = map[int64]bool{}
	for _, cs := range byTask {
		slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(b.fails, a.fails), cmp.Compare(a.seq, b.seq)) })
		for _, c := range cs[:min(len(cs), p.MaxPerTask)] {
			p.keep[c.seq] = true
		}
	}
	return nil
}

func failures(trs []Trajectory) int {
	n := 0
	for _, t := range trs {
		if t.Failed() {
			n++
		}
	}
	return n
}

// Stored reads the trajectories stage s recorded for an instance, in
// replicate order, leaving out the replicates past the instance's task's
// count. It fails when one is missing or failed: the pool is drawn past
// the stage's barrier only.
func Stored(ctx context.Context, units UnitReader, s *Stage, convID string) ([]Trajectory, error) {
	vs := s.Variants()
	got, err := units.ConversationUnits(ctx, StageName, convID, 0)
	if err != nil {
		return nil, fmt.Errorf("reading trajectories of %s: %w", convID, err)
	}
	out := make([]Trajectory, 0, len(vs))
	for _, v := range vs {
		found := false
		for _, u := range got {
			if u.Variant != v.Name || u.Version != v.Version {
				continue
			}
			if u.Status != ledger.Done {
				return nil, fmt.Errorf("trajectory %s of %s is not done (%s): %s", v.Name, convID, u.Status, u.Error)
			}
			tr, err := Decode(u.Output)
			if err != nil {
				return nil, fmt.Errorf("trajectory %s of %s: %w", v.Name, convID, err)
			}
			// A replicate past its task's count is no trajectory, also one
			// simulated before the count was lowered.
			if !tr.Uncounted(s.opts.TaskReplicates) {
				out = append(out, tr)
			}
			found = true
			break
		}
		if !found {
			return nil, fmt.Errorf("trajectory %s of %s is not stored (run %s to the end first)", v.Name, convID, StageName)
		}
	}
	return out, nil
}

// TrajectoryID is the conversation ID of replicate r of an instance.
func TrajectoryID(convID string, r int) string { return fmt.Sprintf("%s#%s", convID, Replicate(r)) }

// Trajectories is the deriving step (pipeline.Derive, origin Origin, over
// the ingested records) that turns the stored trajectories of the
// instances in pool into conversations: the system prompt, the user turns
// as they were sent and the baseline's answers, with the instance's
// record as Meta so that graders read it as they read the ingested one.
// Run it past the barriers of the simulate stage (s) and of the check.
func Trajectories(units UnitReader, s *Stage, pool *Pool) pipeline.Visit {
	return func(ctx context.Context, st ledger.Stored, emit pipeline.Emit) error {
		trs, err := Stored(ctx, units, s, st.Conv.ID)
		if err != nil {
			return err
		}
		if len(trs) == 0 || trs[0].Skipped != "" || !pool.Selected(st.Seq, trs) {
			return nil
		}
		if pool.Check != nil {
			v, err := pool.Check.Stored(ctx, units, st.Conv.ID)
			if err != nil {
				return err
			}
			if v.Flagged() {
				return nil
			}
		}
		for _, tr := range pool.Replayed(trs) {
			c := &conv.Conversation{
				ID: TrajectoryID(st.Conv.ID, tr.Replicate), Source: st.Conv.Source, Format: Format,
				System: tr.System, Messages: withOriginals(tr), Language: st.Conv.Language, Meta: st.Conv.Meta,
			}
			if err := emit(st.Seq, c); err != nil {
				return err
			}
		}
		return nil
	}
}

// withOriginals returns tr's messages with each user message's Original set
// to the shard it revealed, as written (the user simulator's wording is
// Content): shard k at turn k, or in ModeLiC the one Revealed names, and
// none for a message that revealed none. Strategies that join the user's
// pieces (concat, Laban et al.'s Concat User) read the shards themselves.
func withOriginals(tr Trajectory) []conv.Message {
	out := slices.Clone(tr.Messages)
	turn := 0
	for i := range out {
		if out[i].Role != conv.User {
			continue
		}
		turn++
		piece := turn
		if tr.Revealed != nil {
			piece = 0
			if turn <= len(tr.Revealed) {
				piece = tr.Revealed[turn-1]
			}
		}
		if piece >= 1 && piece <= len(tr.Shards) {
			out[i].Original = tr.Shards[piece-1]
		}
	}
	return out
}
