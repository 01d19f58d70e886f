package compint

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
)

// StitchMethod says in which order conversations are stitched.
type StitchMethod string

// The stitching methods.
const (
	// StitchTopic grows each context from a seed by nearest neighbours
	// over the conversations' embeddings (the paper's App. A.1; see
	// StitchTopics). It needs the embedder role.
	StitchTopic StitchMethod = "topic"
	// StitchSequential appends conversations in input order (see
	// Stitcher): the fallback of a run without an embedder.
	StitchSequential StitchMethod = "sequential"
)

// CheckStitchMethod accepts "" (the default), topic and sequential.
func CheckStitchMethod(m StitchMethod) error {
	switch m {
	case "", StitchTopic, StitchSequential:
		return nil
	}
	return fmt.Errorf("stitching: unknown method %q (want %s or %s)", m, StitchTopic, StitchSequential)
}

// DefaultEmbedMaxTokens is how much of a conversation's text is embedded
// (EmbedText), counted with the run's tokenizer: within the 8,192-token
// input limit of OpenAI's embedding models and of most local ones. The
// reference code cuts at the embedding model's own limit less 20 tokens
// (32,748 for Qwen3-Embedding-0.6B), so the two differ only for
// conversations longer than this.
const DefaultEmbedMaxTokens = 8000

// EmbedText is the text of c that topic stitching embeds, as the reference
// code forms it: the contents of all its messages (a system message
// included), in order, joined by a blank line; cut to its first maxTokens
// tokens (counted with tok, at a character boundary) when longer. A
// conversation with no text gives "" and is left out of topic stitching.
func EmbedText(tok *tokens.Counter, c *conv.Conversation, maxTokens int) string {
	var b strings.Builder
	if c.System != "" {
		b.WriteString(c.System)
	}
	for _, m := range c.Messages {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Content)
	}
	s := b.String()
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return tok.Head(s, maxTokens)
}

// TopicPool holds the conversations topic stitching chooses from: per
// conversation its id, its seq and its L2-normalized embedding (float32),
// in the order added, which is the input order. It holds no text: a
// conversation is read again when it is appended to a context, so memory
// is n·(4·dim + id) bytes for n conversations.
type TopicPool struct {
	dim  int
	vecs []float32 // n·dim
	ids  []string
	seqs []int64
}

// Add appends a conversation with its embedding v, which it normalizes. It
// refuses a vector of another length than the first, and a zero or
// non-finite one.
func (p *TopicPool) Add(id string, seq int64, v []float32) error {
	if len(v) == 0 {
		return fmt.Errorf("topic stitching: conversation %s has an empty embedding", id)
	}
	if p.dim == 0 {
		p.dim = len(v)
	}
	if len(v) != p.dim {
		return fmt.Errorf("topic stitching: conversation %s has an embedding of %d dimensions, the others %d", id, len(v), p.dim)
	}
	var ss float64
	for _, x := range v {
		ss += float64(float64(x) * float64(x))
	}
	norm := math.Sqrt(ss)
	if norm == 0 || math.IsInf(norm, 0) || math.IsNaN(norm) {
		return fmt.Errorf("topic stitching: conversation %s has a zero or non-finite embedding", id)
	}
	for _, x := range v {
		p.vecs = append(p.vecs, float32(float64(x)/norm))
	}
	p.ids = append(p.ids, id)
	p.seqs = append(p.seqs, seq)
	return nil
}

// Len is the number of conversations in the pool.
func (p *TopicPool) Len() int { return len(p.ids) }

func (p *TopicPool) vec(i int) []float32 { return p.vecs[i*p.dim : (i+1)*p.dim] }

// dot is the scalar product in float64, each product rounded on its own
// (the explicit conversion forbids fused multiply-adds) and summed in four
// fixed lanes, so every platform ranks neighbours alike.
func dot(a []float32, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(float64(a[i]) * b[i])
		s1 += float64(float64(a[i+1]) * b[i+1])
		s2 += float64(float64(a[i+2]) * b[i+2])
		s3 += float64(float64(a[i+3]) * b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(float64(a[i]) * b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// StitchTopics builds contexts with st, in the order the CompInt paper's
// topic-cohesive stitching (App. A.1, Algorithm 1) and its reference code
// choose conversations:
//
//   - The seed of each context is the conversation added to pool first
//     (lowest input order) that no earlier context used.
//   - The context grows by the unused conversation nearest to its
//     centroid: the highest cosine similarity to the normalized sum of
//     the normalized embeddings of the conversations in it (the paper's
//     normalized mean; normalizing drops the 1/n). Cosine is the dot
//     product of normalized vectors, as the reference's Euclidean k-NN
//     over normalized vectors ranks them. Exact ties go to the
//     conversation added first. The ranking is over every unused
//     conversation (a full scan, where the reference queries a k-NN index
//     for k + |context| neighbours and widens it when all are used: the
//     same first choice).
//   - It stops when the context reaches st's target; st crops the last
//     conversation at a turn boundary under its cap (1.25 × target), as the
//     paper describes (the reference code drops whole conversations from
//     the end instead).
//   - A conversation used by a finished context is used by no other
//     (deduplication across contexts). One that contributes no turn to a
//     context (no complete turn, or its first turn alone passes the cap)
//     is passed over for that context and stays in the pool.
//   - When the unused conversations run out before the target, the partial
//     context is dropped (st's leftover) and stitching ends: the reference
//     code stops with an error there.
//
// get reads a conversation by id when it is appended; emit receives each
// finished context with the seq of the conversation that completed it.
// StitchTopics stops after st's MaxContexts.
func StitchTopics(ctx context.Context, pool *TopicPool, st *Stitcher, get func(ctx context.Context, id string) (*conv.Conversation, error), emit func(b *Base, seq int64) error) error {
	n := pool.Len()
	used := make([]bool, n)  // by a finished context
	tried := make([]bool, n) // by the context in progress
	sum := make([]float64, pool.dim)
	next := 0 // no conversation before it can be a seed
	var members, passed []int
	for !st.Done() {
		for next < n && used[next] {
			next++
		}
		if next == n {
			return nil
		}
		clear(sum)
		members, passed = members[:0], passed[:0]
		i := next
		for {
			c, err := get(ctx, pool.ids[i])
			if err != nil {
				return fmt.Errorf("topic stitching: reading conversation %s: %w", pool.ids[i], err)
			}
			skipped := st.Stats().Skipped
			b := st.Add(c)
			tried[i] = true
			if st.Stats().Skipped > skipped {
				passed = append(passed, i)
				if len(members) == 0 {
					used[i] = true // a seed that gives nothing never will
				}
			} else {
				members = append(members, i)
				for k, x := range pool.vec(i) {
					sum[k] += float64(x)
				}
			}
			if b != nil {
				for _, m := range members {
					used[m] = true
				}
				for _, m := range append(members, passed...) {
					tried[m] = false
				}
				if err := emit(b, pool.seqs[i]); err != nil {
					return err
				}
				break
			}
			if len(members) == 0 {
				i = -1 // the seed gave nothing: take the next seed
				for _, m := range passed {
					tried[m] = false
				}
				break
			}
			i = nearest(pool, sum, used, tried)
			if i < 0 {
				return nil // the pool ran out short of the target: st keeps the leftover
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// nearest returns the conversation neither used nor tried with the
// highest dot product with sum (the cosine to the centroid, up to a
// positive factor), the first added among equals; -1 when none is left.
func nearest(pool *TopicPool, sum []float64, used, tried []bool) int {
	best, bestScore := -1, math.Inf(-1)
	for j := range pool.Len() {
		if used[j] || tried[j] {
			continue
		}
		if s := dot(pool.vec(j), sum); s > bestScore {
			best, bestScore = j, s
		}
	}
	return best
}
