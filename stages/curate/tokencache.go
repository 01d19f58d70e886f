package curate

import (
	"sort"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
)

// TokenCache holds token counts for one conversation so that every strategy
// and every turn reuse them: each original message is tokenized at most once
// (on first use, so a final reply no context includes is never tokenized), and
// literal texts such as a placeholder or a note are counted once per
// conversation.
//
// A TokenCache belongs to one conversation and one goroutine; it is not safe
// for concurrent use. Build a new one per conversation.
type TokenCache struct {
	c       *conv.Conversation
	counter *tokens.Counter
	msg     []int // content tokens of c.Messages[i]; -1 until counted
	system  int   // content tokens of c.System; -1 until counted
	text    map[string]int
	filler  map[[2]int]int // (message, words) -> content tokens
	// prefix holds, per message, one tokenization of a long stretch of its
	// filler stream, from which fillPrefix counts shorter cuts.
	prefix map[int]*fillerTokens
	// words, when set, counts filler cuts from per-word counts (shared by
	// every conversation of a stage) instead of tokenizing them.
	words *fillerWords

	// Per-conversation work that model-backed strategies share: one AC3
	// analysis per turn serves every operator, one summary per reply serves
	// every turn. Keys are built by the strategies (see memoKey).
	memo  map[memoKey]any
	retry int
}

// memoKey names one piece of shared work: what it is, the version of what
// produced it, and the turn or message it is for.
type memoKey struct {
	kind, version string
	n             int
}

// SetRetry records how many times this conversation's failed work was
// re-queued (pipeline.Task.Retry); model-backed strategies offset their
// re-ask counter by it so a retry asks afresh instead of replaying the
// cached malformed answer.
func (tc *TokenCache) SetRetry(n int) { tc.retry = n }

// Retry returns what SetRetry recorded.
func (tc *TokenCache) Retry() int { return tc.retry }

func (tc *TokenCache) recall(k memoKey) (any, bool) {
	v, ok := tc.memo[k]
	return v, ok
}

func (tc *TokenCache) remember(k memoKey, v any) {
	if tc.memo == nil {
		tc.memo = map[memoKey]any{}
	}
	tc.memo[k] = v
}

// NewTokenCache returns an empty cache for c counting with counter.
func NewTokenCache(c *conv.Conversation, counter *tokens.Counter) *TokenCache {
	msg := make([]int, len(c.Messages))
	for i := range msg {
		msg[i] = -1
	}
	return &TokenCache{c: c, counter: counter, msg: msg, system: -1}
}

// Counter returns the counter the cache counts with.
func (tc *TokenCache) Counter() *tokens.Counter { return tc.counter }

// Message returns the content tokens of original message i.
func (tc *TokenCache) Message(i int) int {
	if tc.msg[i] < 0 {
		tc.msg[i] = tc.counter.Count(tc.c.Messages[i].Content)
	}
	return tc.msg[i]
}

// System returns the content tokens of the conversation's system message.
func (tc *TokenCache) System() int {
	if tc.system < 0 {
		tc.system = tc.counter.Count(tc.c.System)
	}
	return tc.system
}

// Text returns the tokens of a literal text, counting it once per cache. Use
// it for texts that recur across turns (placeholders, notes, templates); for a
// text seen once, call Counter().Count instead so the cache does not keep it.
func (tc *TokenCache) Text(s string) int {
	if n, ok := tc.text[s]; ok {
		return n
	}
	if tc.text == nil {
		tc.text = map[string]int{}
	}
	n := tc.counter.Count(s)
	tc.text[s] = n
	return n
}

// Cost returns what a message of role costs in a chat request given its
// content tokens (see tokens.Counter.MessageCost).
func (tc *TokenCache) Cost(role conv.Role, contentTokens int) int {
	return tc.counter.MessageCost(string(role), contentTokens)
}

// fill returns the content tokens of message i's filler cut at words words.
func (tc *TokenCache) fill(i, words int) int {
	k := [2]int{i, words}
	if n, ok := tc.filler[k]; ok {
		return n
	}
	if tc.filler == nil {
		tc.filler = map[[2]int]int{}
	}
	var n int
	if tc.words != nil {
		n = tc.words.count(tc.c.ID, i, words)
	} else if m, ok := tc.fillPrefix(i, words); ok {
		n = m
	} else {
		n = tc.counter.Count(fillerText(tc.c.ID, i, words))
	}
	tc.filler[k] = n
	return n
}

// fillerTokens is one tokenization of the first words words of a message's
// filler stream: the byte offset at which each word and each token ends.
type fillerTokens struct {
	words    int
	wordEnds []int
	tokEnds  []int
}

// fillPrefix counts the tokens of message i's filler cut at words words
// from one tokenization of a longer cut of the same stream: the tokens that
// end by the cut's last byte. Filler text is words of plain prose joined by
// single spaces, which the encodings' pre-tokenizers split before each
// space, so a cut at a word's end is a token boundary and the tokens before
// it are those of the cut on its own (TestFillPrefixMatchesWholeCounts
// checks this for every encoding). ok is false where the cut is not a token
// boundary; the caller then counts the cut on its own. The filler fit tries
// half a dozen cuts near one length: this tokenizes one stretch a quarter
// longer instead of each of them.
func (tc *TokenCache) fillPrefix(i, words int) (n int, ok bool) {
	if words <= 0 {
		return 0, false
	}
	ft := tc.prefix[i]
	if ft == nil || words > ft.words {
		n := words + words/4 + 16
		text := fillerText(tc.c.ID, i, n)
		ft = &fillerTokens{tokEnds: tc.counter.TokenEnds(text)}
		for k := range len(text) {
			if text[k] == ' ' {
				ft.wordEnds = append(ft.wordEnds, k)
			}
		}
		ft.wordEnds = append(ft.wordEnds, len(text))
		ft.words = len(ft.wordEnds)
		if tc.prefix == nil {
			tc.prefix = map[int]*fillerTokens{}
		}
		tc.prefix[i] = ft
	}
	end := ft.wordEnds[words-1]
	n = sort.SearchInts(ft.tokEnds, end+1) // the tokens ending at or before end
	if n == 0 || ft.tokEnds[n-1] != end {
		return 0, false
	}
	return n, true
}

// part returns the content tokens of a single, unjoined part.
func (tc *TokenCache) part(p Part) int {
	switch {
	case p.Ref == RefSystem:
		return tc.System()
	case p.Ref == RefText:
		return tc.Text(p.Text)
	case p.Fill > 0:
		return tc.fill(p.Ref, p.Fill)
	default:
		return tc.Message(p.Ref)
	}
}

// Total returns the tokens of the chat request Materialize(c, parts) would
// give, under the framing rule of package tokens, from cached counts. A
// message made of joined parts is counted as a whole, because tokens do not
// add up across a join.
//
// Strategies compute their totals with prefix sums instead; Total is the
// general route for contexts of any shape (model-backed strategies, contexts
// read back from storage) and the reference the tests check them against.
func (tc *TokenCache) Total(parts []Part) int {
	n := tokens.ReplyPrimer
	forEachMessage(tc.c, parts, func(role conv.Role, group []Part) {
		var content int
		if len(group) == 1 {
			content = tc.part(group[0])
		} else {
			content = tc.counter.Count(groupContent(tc.c, group))
		}
		n += tc.Cost(role, content)
	})
	return n
}
