package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// Estimator is implemented by stages that call a model, so a dry run can
// say what a run would cost without running it. The run library asks every
// stage of a plan the same question, conversation by conversation, in the
// order the run would run them; nothing is sent and nothing is stored.
type Estimator interface {
	// Estimate returns the model calls the stage would make for the
	// variants of t, and records in f what those variants would produce,
	// for the stages after it. It must not call a model or write anything;
	// it may read units earlier runs stored.
	Estimate(ctx context.Context, t Task, f *Forecast) ([]Call, error)
}

// PredictionReader is implemented by estimators that read from the
// Forecast what earlier stages are predicted to produce, so that a dry run
// knows whose predictions are wanted.
type PredictionReader interface {
	// ReadsPredictionsOf names the stages whose predictions Estimate reads.
	ReadsPredictionsOf() []string
}

// Call is one model call a stage expects to make.
type Call struct {
	Role string
	// Key is equal for calls that would send the same request, which the
	// run sends once (the cache answers the rest): two strategies that give
	// the same context at a turn, the same two answers under two pairs.
	Key              string
	PromptTokens     int
	CompletionTokens int // the answer length the stage expects
	// Prefix is how the prompt begins, as far as the stage can tell: parts
	// in order, each with a key (equal for equal text) and its tokens. A
	// dry run takes the longest run of them another call of the
	// conversation began with as what a provider's prompt cache would
	// serve. Nil: the stage does not say, and nothing is counted cached.
	Prefix []Segment
}

// Segment is one part of a prompt's beginning (see Call.Prefix).
type Segment struct {
	Key    string
	Tokens int
}

// MessagesPrefix is the Prefix of a prompt that sends msgs as they are:
// one segment per message.
func (f *Forecast) MessagesPrefix(msgs []conv.Message) []Segment {
	out := make([]Segment, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, Segment{Key: KeyOf(string(m.Role), m.Content), Tokens: 4 + f.Count(m.Content)})
	}
	return out
}

// MessageSegments is the Prefix of a prompt of msgs the stage has
// rendered: each message line by line, so that two prompts share the
// segments up to the first line where they differ.
func (f *Forecast) MessageSegments(msgs []conv.Message) []Segment {
	var out []Segment
	for _, m := range msgs {
		out = append(out, Segment{Key: "role:" + string(m.Role), Tokens: 4})
		for line := range strings.Lines(m.Content) {
			out = append(out, Segment{Key: KeyOf(line), Tokens: f.Count(line)})
		}
	}
	return out
}

// PrefixCache finds, for the calls of one conversation in the order they
// are given, how much of each prompt's beginning an earlier call shared
// (see Call.Prefix). It is not safe for concurrent use.
type PrefixCache struct{ seen map[string]bool }

// NewPrefixCache returns an empty PrefixCache.
func NewPrefixCache() *PrefixCache { return &PrefixCache{seen: map[string]bool{}} }

// Shared returns the tokens of c's longest run of leading segments that an
// earlier call given to Shared began with too, and remembers c's. Calls of
// different roles never share: the key of each run starts with the role.
func (p *PrefixCache) Shared(c Call) int {
	chain, shared, open := c.Role, 0, true
	for _, s := range c.Prefix {
		chain = KeyOf(chain, s.Key)
		if open && p.seen[chain] {
			shared += s.Tokens
		} else {
			open = false
		}
		p.seen[chain] = true
	}
	return shared
}

// Predicted is what a dry run expects one unit to produce.
type Predicted struct {
	// Key is equal for units expected to produce the same output (so that
	// requests built from them are the same request). A unit whose output
	// cannot be known without calling a model gets a key of its own.
	Key    string
	Tokens int // the output's size in tokens (of each sample)
	// Samples is how many outputs the unit holds (respond's samples per
	// context); 0 means one.
	Samples int
	// Prefix is how a prompt made of the output begins (a context curate
	// can build without a model), for the calls that send it (see
	// Call.Prefix); nil when not known.
	Prefix []Segment
}

// Forecast is what a dry run knows about one conversation as it goes
// through the stages of a plan: the outputs the stages before have been
// predicted to produce. It lives for one conversation.
type Forecast struct {
	// Count counts the tokens of a text, with the run's tokenizer.
	Count func(string) int
	// Unread names the stages whose predictions no later stage of the plan
	// reads. Such a stage may skip computing what makes no call (a dry run
	// of curate alone need not build every rule-based context to count it).
	Unread map[string]bool
	units  map[forecastKey]Predicted
}

// Wanted reports whether a later stage reads stage's predictions.
func (f *Forecast) Wanted(stage string) bool { return !f.Unread[stage] }

type forecastKey struct {
	stage, variant string
	turn           int
}

// NewForecast starts the forecast of one conversation.
func NewForecast(count func(string) int) *Forecast {
	return &Forecast{Count: count, units: map[forecastKey]Predicted{}}
}

// Set records what stage's variant is expected to produce at turn.
func (f *Forecast) Set(stage, variant string, turn int, p Predicted) {
	f.units[forecastKey{stage, variant, turn}] = p
}

// Get returns what stage's variant is expected to produce at turn.
func (f *Forecast) Get(stage, variant string, turn int) (Predicted, bool) {
	p, ok := f.units[forecastKey{stage, variant, turn}]
	return p, ok
}

// MessagesTokens estimates the prompt tokens of msgs the way the model
// client does: the text plus a few tokens of framing per message.
func (f *Forecast) MessagesTokens(msgs []conv.Message) int {
	n := 3
	for _, m := range msgs {
		n += 4 + f.Count(m.Content)
	}
	return n
}

// KeyOf returns a key for the given parts: equal parts, equal keys.
func KeyOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// MessagesKey returns a key for a list of messages: equal messages, equal
// keys.
func MessagesKey(msgs []conv.Message) string {
	parts := make([]string, 0, 2*len(msgs))
	for _, m := range msgs {
		parts = append(parts, string(m.Role), m.Content)
	}
	return KeyOf(parts...)
}
