package compint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
)

// PaperTargetTokens is the stitched length of the paper's main experiments:
// about 80% of a 128K-token window, so the context sits where a system would
// compact it.
const PaperTargetTokens = 100_000

// StitchOptions say how long a stitched context is.
type StitchOptions struct {
	// TargetTokens is the length a context must reach (required, > 0).
	TargetTokens int
	// MaxTokens is the hard cap; 0 means TargetTokens·5/4, the paper's soft
	// upper bound. A conversation that would push the context past it is
	// cropped at a turn boundary.
	MaxTokens int
	// MaxContexts stops stitching after this many contexts (the paper makes
	// 50 per dataset); 0 means no limit.
	MaxContexts int
}

func (o StitchOptions) withDefaults() (StitchOptions, error) {
	if o.TargetTokens <= 0 {
		return o, fmt.Errorf("stitching: target tokens must be positive, got %d", o.TargetTokens)
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = o.TargetTokens + o.TargetTokens/4
	}
	if o.MaxContexts < 0 {
		return o, fmt.Errorf("stitching: max contexts must not be negative, got %d", o.MaxContexts)
	}
	if o.MaxTokens < o.TargetTokens {
		return o, fmt.Errorf("stitching: max tokens %d is below the target %d", o.MaxTokens, o.TargetTokens)
	}
	return o, nil
}

// SourceRef names one conversation a context was stitched from and how much
// of it was used: its first Turns complete turns out of Of.
type SourceRef struct {
	ID     string      `json:"id"`
	Source conv.Source `json:"source"`
	Turns  int         `json:"turns"`
	Of     int         `json:"of"`
}

// Base is a stitched long context before any injection: whole turns of
// consecutive conversations, starting with a user message.
type Base struct {
	ID       string
	System   string // the first source's system message, if any
	Messages []conv.Message
	Sources  []SourceRef
	// Tokens is the chat-request length of System and Messages
	// (tokens.Counter.CountMessages), which lies in [TargetTokens,
	// MaxTokens].
	Tokens int
	// TargetTokens is the target it was stitched to.
	TargetTokens int
	// Language is the sources' language when they all agree, else "".
	Language        string
	Toxic, Redacted bool // any source was

	costs   []int // MessageCost of each message of Messages
	sysCost int
	users   []int // indices in Messages of the user messages
}

// UserTurns is the number of user turns of the context.
func (b *Base) UserTurns() int { return len(b.users) }

// StitchStats count what the Stitcher did with its input.
type StitchStats struct {
	Conversations int // offered to Add
	Used          int // contributed at least one turn to an emitted context
	Cropped       int // conversations that lost complete turns to MaxTokens
	Skipped       int // contributed nothing (no complete turn, or a first turn too long for MaxTokens)
	Contexts      int // contexts emitted
	// LeftoverConversations and LeftoverTokens describe the partial context
	// still short of the target when the input ended; it is not emitted.
	LeftoverConversations int
	LeftoverTokens        int
}

// Stitcher stitches conversations, in the order they are added, into long
// contexts of a target token length, the way the CompInt suite builds its
// WildChat contexts: whole conversations are appended until the context
// reaches the target; a conversation that would push it past the cap is
// cropped at a turn boundary (its remaining turns are dropped).
//
// Only complete turns are taken: a user message with everything up to the
// next user message, provided the assistant answered it. Messages before a
// conversation's first user message are dropped, and a conversation is cut
// before its first unanswered user message, so every context alternates
// user turns and replies. Only the first source's system message is kept.
//
// A Stitcher holds at most one context in progress (never the input), so
// memory stays flat however long the input is. It is not safe for
// concurrent use.
type Stitcher struct {
	tok   *tokens.Counter
	opt   StitchOptions
	cur   *Base
	langs map[string]bool
	stats StitchStats
}

// NewStitcher returns a Stitcher counting with tok.
func NewStitcher(tok *tokens.Counter, opt StitchOptions) (*Stitcher, error) {
	if tok == nil {
		return nil, fmt.Errorf("stitching: no token counter")
	}
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Stitcher{tok: tok, opt: opt}, nil
}

// Options returns the options in effect (defaults filled).
func (s *Stitcher) Options() StitchOptions { return s.opt }

// Done reports whether MaxContexts contexts have been made; Add then
// takes nothing more.
func (s *Stitcher) Done() bool {
	return s.opt.MaxContexts > 0 && s.stats.Contexts >= s.opt.MaxContexts
}

// Stats returns the counts so far. After the last Add it also reports the
// unfinished context as leftover.
func (s *Stitcher) Stats() StitchStats {
	st := s.stats
	if s.cur != nil {
		st.LeftoverConversations = len(s.cur.Sources)
		st.LeftoverTokens = s.cur.Tokens
	}
	return st
}

// total is the request length of the context in progress.
func (b *Base) total() int {
	n := b.sysCost
	for _, c := range b.costs {
		n += c
	}
	return tokens.Total(n)
}

// Add appends c's complete turns to the context in progress and returns the
// context when it has reached the target, or nil. A returned Base is
// finished and owned by the caller; the next Add starts a new one.
func (s *Stitcher) Add(c *conv.Conversation) *Base {
	if s.Done() {
		return nil
	}
	s.stats.Conversations++
	if s.cur == nil {
		s.cur = &Base{}
		s.langs = map[string]bool{}
	}
	b := s.cur
	turns := c.Turns()
	complete := 0
	for _, t := range turns {
		if t.Reply < 0 {
			break
		}
		complete++
	}
	// The system message counts only if this conversation opens the context.
	sysCost := 0
	first := len(b.Sources) == 0
	if first && c.System != "" {
		sysCost = s.tok.MessageCost(string(conv.System), s.tok.Count(c.System))
	}
	now := b.total() + sysCost
	taken := 0
	var msgs []conv.Message
	var costs []int
	for _, t := range turns[:complete] {
		tc := make([]int, 0, t.End-t.User)
		sum := 0
		for _, m := range c.Messages[t.User:t.End] {
			mc := s.tok.MessageCost(string(m.Role), s.tok.Count(m.Content))
			tc = append(tc, mc)
			sum += mc
		}
		if now+sum > s.opt.MaxTokens {
			break
		}
		now += sum
		msgs = append(msgs, c.Messages[t.User:t.End]...)
		costs = append(costs, tc...)
		taken++
	}
	if taken == 0 {
		s.stats.Skipped++
		return nil
	}
	if first {
		b.System = c.System
		b.sysCost = sysCost
	}
	for i, m := range msgs {
		if m.Role == conv.User {
			b.users = append(b.users, len(b.Messages)+i)
		}
	}
	b.Messages = append(b.Messages, msgs...)
	b.costs = append(b.costs, costs...)
	b.Sources = append(b.Sources, SourceRef{ID: c.ID, Source: c.Source, Turns: taken, Of: complete})
	b.Tokens = b.total()
	s.langs[c.Language] = true
	b.Toxic = b.Toxic || c.Toxic
	b.Redacted = b.Redacted || c.Redacted
	if taken < complete {
		s.stats.Cropped++
	}
	if b.Tokens < s.opt.TargetTokens {
		return nil
	}
	if len(s.langs) == 1 {
		b.Language = c.Language
	}
	b.ID = baseID(b.Sources)
	b.TargetTokens = s.opt.TargetTokens
	s.stats.Used += len(b.Sources)
	s.stats.Contexts++
	s.cur = nil
	return b
}

// baseID derives a context's id from its sources and how much of each it
// took, which is all that determines its content.
func baseID(src []SourceRef) string {
	h := sha256.New()
	h.Write([]byte("compint base v1"))
	for _, r := range src {
		fmt.Fprintf(h, "\x00%d:%s\x00%d", len(r.ID), r.ID, r.Turns)
	}
	return "cb-" + hex.EncodeToString(h.Sum(nil)[:10])
}
