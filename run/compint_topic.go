package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/compint"
	"github.com/ac3/ac3/stages/compint/measure"
)

// stitchMethod is how the run stitches: the configured method, else topic
// with an embedder role bound and sequential without one.
func (c *CompInt) stitchMethod(m Model) (compint.StitchMethod, error) {
	if err := compint.CheckStitchMethod(compint.StitchMethod(c.Stitch)); err != nil {
		return "", fmt.Errorf("compint: %w", err)
	}
	has := m.Options != nil && m.Options.Roles[llm.EmbedderRole].Endpoint != ""
	switch compint.StitchMethod(c.Stitch) {
	case compint.StitchTopic:
		if !has {
			return "", fmt.Errorf("compint: stitch: topic needs the %s role (roles.%s: {model: …}); without one use stitch: sequential", llm.EmbedderRole, llm.EmbedderRole)
		}
		return compint.StitchTopic, nil
	case compint.StitchSequential:
		return compint.StitchSequential, nil
	}
	if has {
		return compint.StitchTopic, nil
	}
	return compint.StitchSequential, nil
}

// topicKey is what topic stitching adds to the build key: the method, the
// embedding model and how much of each conversation it embeds.
func (c *CompInt) topicKey(m Model) string {
	model := ""
	if m.Options != nil {
		ep := m.Options.Roles[llm.EmbedderRole].Endpoint
		for _, e := range m.Options.Endpoints {
			if e.Name == ep {
				model = e.Model
			}
		}
	}
	key := fmt.Sprintf(" stitch=topic embedder=%s embed_max_tokens=%d", model, cmp.Or(c.EmbedMaxTokens, compint.DefaultEmbedMaxTokens))
	if c.EmbedPool > 0 && c.EmbedPool != DefaultEmbedPool {
		key += fmt.Sprintf(" embed_pool=%d", c.EmbedPool)
	}
	return key
}

// errEmbedDeferred ends a build walk whose embeddings wait for a batch.
var errEmbedDeferred = errors.New("embeddings wait for a batch")

// maxEmbedRounds bounds the batch rounds of the build's embeddings: one
// should answer them all.
const maxEmbedRounds = 5

// DefaultEmbedPool is how many source conversations topic stitching embeds
// and draws from when stages.compint.embed_pool is not set: 50 contexts of
// 100,000 tokens need a few thousand WildChat conversations, and the pool's
// vectors stay in memory (200 MB at 1,024 dimensions).
const DefaultEmbedPool = 50000

// topicBuild derives the instances by topic stitching: the walk embeds
// every source conversation (through the embedder role, cached in the
// run), then stitches from the embeddings, reading each conversation again
// when it is appended. When the embedder is in batch mode, the walk queues
// the requests, a batch round answers them, and the walk runs again.
func (r *runner) topicBuild(ctx context.Context, c *CompInt, st *compint.Stitcher, bd *compint.Builder) (pipeline.DeriveSummary, error) {
	client, err := r.plan.Model.client(ctx, r.l, nil, r.opts.Progress)
	if err != nil {
		return pipeline.DeriveSummary{}, err
	}
	for round := 1; ; round++ {
		sum, calls, err := r.topicWalk(ctx, c, client, st, bd)
		if !errors.Is(err, errEmbedDeferred) {
			if err == nil {
				r.logf("compint: topic stitching over the embeddings of the input (%d requests to the %s role, %d of them answered by the run's cache)\n", calls.Calls, llm.EmbedderRole, calls.Cached)
			}
			return sum, err
		}
		if round == maxEmbedRounds {
			return sum, fmt.Errorf("compint: embeddings still wait for a batch after %d rounds", round)
		}
		r.logf("compint: the embeddings of the input wait for a batch\n")
		if r.plan.Model.batchSettings().Files {
			r.logf("write their requests with 'ac3 batch export', and load the results with 'ac3 batch import'\n")
			return pipeline.DeriveSummary{Stopped: true}, nil
		}
		d, err := r.driver(ctx)
		if err != nil {
			return sum, err
		}
		if err := d.Run(ctx); err != nil {
			return sum, err
		}
		// The walk starts again from the first parent; st and bd are
		// untouched, as stitching begins only once every embedding is in.
	}
}

// topicWalk is one walk of topicBuild. It returns errEmbedDeferred (after
// queueing every request) when some embeddings wait for a batch.
func (r *runner) topicWalk(ctx context.Context, c *CompInt, client *llm.Client, st *compint.Stitcher, bd *compint.Builder) (pipeline.DeriveSummary, llm.EmbedResponse, error) {
	tok, err := tokens.New(cmp.Or(c.Encoding, tokens.DefaultEncoding))
	if err != nil {
		return pipeline.DeriveSummary{}, llm.EmbedResponse{}, err
	}
	maxTok := cmp.Or(c.EmbedMaxTokens, compint.DefaultEmbedMaxTokens)
	pool := &compint.TopicPool{}
	var calls llm.EmbedResponse
	deferred := false
	type item struct {
		id  string
		seq int64
	}
	var items []item
	var texts []string
	// Several requests' worth of texts at a time, so the endpoint's
	// concurrency is used; the texts are dropped once embedded.
	per := 4 * client.EmbedInputs("")
	flush := func(ctx context.Context) error {
		if len(texts) == 0 {
			return nil
		}
		res, err := client.Embed(ctx, llm.EmbedRequest{Stage: measure.StageName, Input: texts})
		calls.Calls += res.Calls
		calls.Cached += res.Cached
		switch {
		case errors.Is(err, llm.ErrDeferred):
			deferred = true
		case err != nil:
			return fmt.Errorf("compint: %w", err)
		default:
			for i, it := range items {
				if err := pool.Add(it.id, it.seq, res.Vectors[i]); err != nil {
					return err
				}
			}
		}
		items, texts = items[:0], texts[:0]
		return nil
	}
	limit, seen := cmp.Or(c.EmbedPool, DefaultEmbedPool), 0
	visit := func(ctx context.Context, s ledger.Stored, _ pipeline.Emit) error {
		if seen >= limit {
			return nil
		}
		seen++
		text := compint.EmbedText(tok, s.Conv, maxTok)
		if text == "" {
			return nil
		}
		items, texts = append(items, item{s.Conv.ID, s.Seq}), append(texts, text)
		if len(texts) >= per {
			return flush(ctx)
		}
		return nil
	}
	finish := func(ctx context.Context, emit pipeline.Emit) error {
		if err := flush(ctx); err != nil {
			return err
		}
		if deferred {
			return errEmbedDeferred
		}
		get := func(ctx context.Context, id string) (*conv.Conversation, error) {
			s, ok, err := r.l.Conversation(ctx, id)
			if err == nil && !ok {
				err = errors.New("not in the run")
			}
			return s.Conv, err
		}
		return compint.StitchTopics(ctx, pool, st, get, func(b *compint.Base, seq int64) error {
			return bd.Expand(b, func(in *compint.Instance) error { return emit(seq, in.Conv) })
		})
	}
	sum, err := pipeline.Derive(ctx, r.l, measure.Origin, ledger.MustOrigins(ledger.OriginSource), visit,
		pipeline.DeriveOptions{Stop: r.opts.Stop, Finish: finish})
	if err != nil && deferred {
		err = errEmbedDeferred
	}
	return sum, calls, err
}
