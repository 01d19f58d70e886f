package run

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/shard"
	"github.com/ac3/ac3/stages/curate"
)

// How a shard treats the endpoints' limits and the budget (run.shard_limits).
const (
	// ShardLimitsDivide splits rpm, tpm, concurrency and the budget among
	// the shards (rounded up, at least 1), so N shards together stay
	// inside what one run may use. The default.
	ShardLimitsDivide = "divide"
	// ShardLimitsWhole gives every shard the whole limits and budget: for
	// shards that reach different endpoints or keys.
	ShardLimitsWhole = "whole"
)

// forShard is the plan as shard p.Shard runs it: limits and budget
// divided (unless ShardLimitsWhole), and no report or exports, which are
// made from the merged run. It returns a line saying what was left out.
func (p Plan) forShard() (Plan, string) {
	if !p.Shard.Enabled() {
		return p, ""
	}
	n := p.Shard.Count
	if p.ShardLimits != ShardLimitsWhole && n > 1 {
		p.Model.BudgetUSD /= float64(n)
		if o := p.Model.Options; o != nil {
			c := *o
			c.Endpoints = make([]llm.Endpoint, len(o.Endpoints))
			for i, ep := range o.Endpoints {
				ep.Limits.RPM = shard.Divide(ep.Limits.RPM, n)
				ep.Limits.TPM = shard.Divide(ep.Limits.TPM, n)
				ep.Limits.Concurrency = shard.Divide(ep.Limits.Concurrency, n)
				ep.Limits.MinConcurrency = min(ep.Limits.MinConcurrency, ep.Limits.Concurrency)
				c.Endpoints[i] = ep
			}
			p.Model.Options = &c
		}
	}
	var note string
	if p.Report != nil || len(p.Exports) > 0 {
		note = fmt.Sprintf("shard %s: no report or exports here; they are made from the merged run ('ac3 merge', then run again on the merged file)", p.Shard)
		p.Report, p.Exports = nil, nil
	}
	return p, note
}

// shardable refuses a sharded plan with a step that reads the conversations
// of the whole run together: a shard would read only its own, and the merged
// run would then differ from a single run's. Such steps run on the merged
// run instead (merge, then run the config with them unsharded).
func (p Plan) shardable() error {
	if !p.Shard.Enabled() {
		return nil
	}
	const after = "leave it out of the shards' config and run it on the merged run ('ac3 merge', then 'ac3 run' without --shard)"
	if p.CompInt != nil {
		return fmt.Errorf("shard %s: compint stitches conversations of the whole run into long contexts, and a shard has only its own: %s", p.Shard, after)
	}
	if c := p.Curate; c != nil {
		switch c.AC3.Memory {
		case MemoryOnline:
			return fmt.Errorf("shard %s: the online memory learns from every conversation of the run in order, and a shard has only its own: %s", p.Shard, after)
		case MemoryOffline:
			return fmt.Errorf("shard %s: the offline memory is learned from the whole run ('ac3 memory learn'), and a shard has only its own conversations: %s", p.Shard, after)
		}
		specs, _ := curate.ParseList(strings.Join(c.Strategies, ",")) // a bad list is check's to report
		if c.AC3.Adaptive.Policy == curate.PolicyScored && slices.ContainsFunc(specs, func(sp curate.Spec) bool { return sp.Name == "adaptive" }) {
			return fmt.Errorf("shard %s: the scored adaptive policy is fitted on the whole run ('ac3 policy fit'), and a shard has only its own conversations: %s", p.Shard, after)
		}
	}
	return nil
}

// ValidShardLimits checks a run.shard_limits value ("" is the default).
func ValidShardLimits(v string) error {
	switch v {
	case "", ShardLimitsDivide, ShardLimitsWhole:
		return nil
	}
	return fmt.Errorf("shard_limits %q: want %s or %s", v, ShardLimitsDivide, ShardLimitsWhole)
}

// checkShard refuses to continue a run file as another shard than the one
// it was made as (or a shard as a whole run, or the reverse), records a new
// shard's identity, and records the settings of the steps this plan runs.
func (r *runner) checkShard(ctx context.Context) error {
	got, ok, err := r.l.Shard(ctx)
	if err != nil {
		return err
	}
	want := r.plan.Shard
	switch {
	case ok && got.Merged() && want.Enabled():
		return fmt.Errorf("%s is a run merged from %d shards; it cannot be continued as shard %s", r.plan.DB, got.Count, want)
	case ok && got.Merged():
		return nil
	case ok && !want.Enabled():
		return fmt.Errorf("%s is shard %d/%d of a sharded run: pass --shard %d/%d to continue it, or merge the shards with 'ac3 merge'", r.plan.DB, got.Index, got.Count, got.Index, got.Count)
	case ok && (got.Index != want.Index || got.Count != want.Count || got.Scheme != shard.Scheme):
		return fmt.Errorf("%s was made as shard %d/%d (%s); it cannot be continued as shard %s (%s)", r.plan.DB, got.Index, got.Count, got.Scheme, want, shard.Scheme)
	case !want.Enabled():
		return nil
	case !ok:
		n, err := r.l.CountConversations(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%s holds a run that is not sharded; it cannot be continued as shard %s", r.plan.DB, want)
		}
		if err := r.l.SetShard(ctx, ledger.ShardInfo{Index: want.Index, Count: want.Count, Scheme: shard.Scheme}); err != nil {
			return err
		}
	}
	fps, err := r.plan.stepFingerprints()
	if err != nil {
		return err
	}
	steps := make([]string, 0, len(fps))
	for s := range fps {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	for _, s := range steps {
		if err := r.l.SetShardStep(ctx, s, fps[s]); err != nil {
			return err
		}
	}
	return nil
}

// stepFingerprints hashes, per step the plan runs, everything that decides
// that step's results: its settings, the run seed, and the models and
// sampling parameters of the roles (never addresses, keys or limits, which
// may differ between machines). Shards merge only when these agree.
func (p Plan) stepFingerprints() (map[string]string, error) {
	type modelOf struct {
		Model, Output, Mode string
		Params              llm.Params
	}
	roles := map[string]modelOf{}
	if o := p.Model.Options; o != nil {
		eps := map[string]llm.Endpoint{}
		for _, ep := range o.Endpoints {
			eps[ep.Name] = ep
		}
		for name, b := range o.Roles {
			ep := eps[b.Endpoint]
			roles[name] = modelOf{Model: ep.Model, Output: string(ep.Output), Mode: string(cmp.Or(b.Mode, ep.Mode)), Params: b.Params}
		}
	}
	out := map[string]string{}
	sections := map[string]any{}
	add := func(step string, present bool, section any) {
		if present {
			sections[step] = section
		}
	}
	add("ingest", p.Ingest != nil, p.Ingest)
	add("annotate", p.Annotate != nil, p.Annotate)
	add("curate", p.Curate != nil, p.Curate)
	add("lic", p.LiC != nil, p.LiC)
	add("respond", p.Respond != nil, p.Respond)
	add("replies", p.Replies != nil, p.Replies)
	add("judge", p.Judge != nil, p.Judge)
	add("compint", p.CompInt != nil, p.CompInt)
	for step, section := range sections {
		settings, err := withoutPace(section)
		if err != nil {
			return nil, fmt.Errorf("fingerprinting the settings of %s: %w", step, err)
		}
		b, err := json.Marshal(struct {
			Seed     int64
			Settings any
			Roles    map[string]modelOf
			EnvModel string
		}{p.Seed, settings, roles, p.Model.EnvModel})
		if err != nil {
			return nil, fmt.Errorf("fingerprinting the settings of %s: %w", step, err)
		}
		sum := sha256.Sum256(b)
		out[step] = hex.EncodeToString(sum[:])
	}
	return out, nil
}

// owns is the ingest's ownership test: nil (everything) when not sharded.
func (r *runner) owns() func(string) bool {
	if !r.plan.Shard.Enabled() {
		return nil
	}
	return r.plan.Shard.Owns
}

// paceKeys are settings that change how fast a step runs, never what it
// records; shards on machines of different sizes may set them apart.
var paceKeys = map[string]bool{"Workers": true, "Window": true}

// withoutPace is section as generic JSON without its paceKeys, at any depth.
func withoutPace(section any) (any, error) {
	b, err := json.Marshal(section)
	if err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // exact, whatever the size of a seed
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if paceKeys[k] {
					delete(v, k)
					continue
				}
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(v)
	return v, nil
}

// WriteMerged prints what merging the shards into out did, as 'ac3 merge'
// shows it, and what to run next.
func WriteMerged(w io.Writer, out string, rep ledger.MergeReport) {
	fmt.Fprintf(w, "merged %d shards into %s: %d conversations, %d units, %d model calls\n", rep.Shards, out, rep.Conversations, rep.Units, rep.Calls)
	if rep.CrossDuplicates > 0 {
		fmt.Fprintf(w, "dropped %d conversations as duplicates of earlier ones in other shards (dedupe); their model calls stay in the spend\n", rep.CrossDuplicates)
	}
	fmt.Fprintln(w, "next: run the same config (or report/export) on the merged file for the report and exports")
}
