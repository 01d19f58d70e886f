package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

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
