package curate

import (
	"sort"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Workspace is what the strategies of one conversation share while they
// curate it:
//
//   - token counts, so that every strategy and every turn reuse them: each
//     original message is tokenized at most once (on first use, so a final
//     reply no context includes is never tokenized), and literal texts such
//     as a placeholder or a note are counted once per conversation;
//   - the model-backed strategies' work (memoKey): one AC3 analysis per
//     turn serves every operator, one summary per reply serves every turn;
//   - how many times the conversation's failed work was retried (Retry).
//
// A Workspace belongs to one conversation and one goroutine; it is not safe
// for concurrent use. Build a new one per conversation.
type Workspace struct {
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
	words *curated.FillerWords

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
func (ws *Workspace) SetRetry(n int) { ws.retry = n }

// Retry returns what SetRetry recorded.
func (ws *Workspace) Retry() int { return ws.retry }

func (ws *Workspace) recall(k memoKey) (any, bool) {
	v, ok := ws.memo[k]
	return v, ok
}

func (ws *Workspace) remember(k memoKey, v any) {
	if ws.memo == nil {
		ws.memo = map[memoKey]any{}
	}
	ws.memo[k] = v
}

// NewWorkspace returns an empty workspace for c counting with counter.
func NewWorkspace(c *conv.Conversation, counter *tokens.Counter) *Workspace {
	msg := make([]int, len(c.Messages))
	for i := range msg {
		msg[i] = -1
	}
	return &Workspace{c: c, counter: counter, msg: msg, system: -1}
}

// Counter returns the counter the workspace counts with.
func (ws *Workspace) Counter() *tokens.Counter { return ws.counter }

// Message returns the content tokens of original message i.
func (ws *Workspace) Message(i int) int {
	if ws.msg[i] < 0 {
		ws.msg[i] = ws.counter.Count(ws.c.Messages[i].Content)
	}
	return ws.msg[i]
}

// System returns the content tokens of the conversation's system message.
func (ws *Workspace) System() int {
	if ws.system < 0 {
		ws.system = ws.counter.Count(ws.c.System)
	}
	return ws.system
}

// Text returns the tokens of a literal text, counting it once per
// workspace. Use it for texts that recur across turns (placeholders, notes,
// templates); for a text seen once, call Counter().Count instead so the
// workspace does not keep it.
func (ws *Workspace) Text(s string) int {
	if n, ok := ws.text[s]; ok {
		return n
	}
	if ws.text == nil {
		ws.text = map[string]int{}
	}
	n := ws.counter.Count(s)
	ws.text[s] = n
	return n
}

// Cost returns what a message of role costs in a chat request given its
// content tokens (see tokens.Counter.MessageCost).
func (ws *Workspace) Cost(role conv.Role, contentTokens int) int {
	return ws.counter.MessageCost(string(role), contentTokens)
}

// fill returns the content tokens of message i's filler cut at words words.
func (ws *Workspace) fill(i, words int) int {
	k := [2]int{i, words}
	if n, ok := ws.filler[k]; ok {
		return n
	}
	if ws.filler == nil {
		ws.filler = map[[2]int]int{}
	}
	var n int
	if ws.words != nil {
		n = ws.words.Count(ws.c.ID, i, words)
	} else if m, ok := ws.fillPrefix(i, words); ok {
		n = m
	} else {
		n = ws.counter.Count(curated.FillerText(ws.c.ID, i, words))
	}
	ws.filler[k] = n
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
func (ws *Workspace) fillPrefix(i, words int) (n int, ok bool) {
	if words <= 0 {
		return 0, false
	}
	ft := ws.prefix[i]
	if ft == nil || words > ft.words {
		n := words + words/4 + 16
		text := curated.FillerText(ws.c.ID, i, n)
		ft = &fillerTokens{tokEnds: ws.counter.TokenEnds(text)}
		for k := range len(text) {
			if text[k] == ' ' {
				ft.wordEnds = append(ft.wordEnds, k)
			}
		}
		ft.wordEnds = append(ft.wordEnds, len(text))
		ft.words = len(ft.wordEnds)
		if ws.prefix == nil {
			ws.prefix = map[int]*fillerTokens{}
		}
		ws.prefix[i] = ft
	}
	end := ft.wordEnds[words-1]
	n = sort.SearchInts(ft.tokEnds, end+1) // the tokens ending at or before end
	if n == 0 || ft.tokEnds[n-1] != end {
		return 0, false
	}
	return n, true
}

// part returns the content tokens of a single, unjoined part.
func (ws *Workspace) part(p curated.Part) int {
	switch {
	case p.Ref == curated.RefSystem:
		return ws.System()
	case p.Ref == curated.RefText:
		return ws.Text(p.Text)
	case p.Fill > 0:
		return ws.fill(p.Ref, p.Fill)
	default:
		return ws.Message(p.Ref)
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
func (ws *Workspace) Total(parts []curated.Part) int {
	n := tokens.ReplyPrimer
	curated.ForEachMessage(ws.c, parts, func(role conv.Role, group []curated.Part) {
		var content int
		if len(group) == 1 {
			content = ws.part(group[0])
		} else {
			content = ws.counter.Count(curated.GroupContent(ws.c, group))
		}
		n += ws.Cost(role, content)
	})
	return n
}
