// Package synth writes synthetic WildChat-shaped conversations for tests and
// benchmarks: the same top-level fields and per-message fields as a WildChat
// JSONL dump, 1–12 user turns, message lengths spread like real chat (short
// questions, long answers, the odd pasted block of code), in several
// languages, deterministic for a seed. Nothing here is real data.
package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// Options shape the generated conversations.
type Options struct {
	Seed          uint64
	Conversations int
	// MaxTurns caps user turns per conversation (default 12).
	MaxTurns int
}

var words = strings.Fields(`the a of to and in is it that for on with as this be are by
function code error python value list file data model result number table query loop
string return class method test output input example please can you explain why how
what when should would could make change fix write rewrite again instead now also
probability equation matrix proof integral derivative market price budget revenue
story character poem chapter plot essay paragraph summary student lesson course
cell protein patient treatment experiment hypothesis sample variable average total`)

var languages = []string{"English", "English", "English", "English", "Chinese", "Spanish", "French", "Russian"}

type message struct {
	Content        string         `json:"content"`
	Country        string         `json:"country"`
	HashedIP       string         `json:"hashed_ip"`
	Header         map[string]any `json:"header"`
	Language       string         `json:"language"`
	Redacted       bool           `json:"redacted"`
	Role           string         `json:"role"`
	State          string         `json:"state"`
	Timestamp      *string        `json:"timestamp"`
	Toxic          bool           `json:"toxic"`
	TurnIdentifier int64          `json:"turn_identifier"`
}

type record struct {
	ConversationHash   string         `json:"conversation_hash"`
	Model              string         `json:"model"`
	Timestamp          string         `json:"timestamp"`
	Conversation       []message      `json:"conversation"`
	Turn               int            `json:"turn"`
	Language           string         `json:"language"`
	OpenAIModeration   []any          `json:"openai_moderation"`
	DetoxifyModeration []any          `json:"detoxify_moderation"`
	Toxic              bool           `json:"toxic"`
	Redacted           bool           `json:"redacted"`
	State              string         `json:"state"`
	Country            string         `json:"country"`
	HashedIP           string         `json:"hashed_ip"`
	Header             map[string]any `json:"header"`
}

// WriteWildChat writes opts.Conversations conversations as WildChat JSONL to
// w and returns the bytes written.
func WriteWildChat(w io.Writer, opts Options) (int64, error) {
	if opts.MaxTurns <= 0 {
		opts.MaxTurns = 12
	}
	r := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	bw := bufio.NewWriterSize(w, 1<<20)
	header := map[string]any{"accept-language": "en-US,en;q=0.9", "user-agent": "Mozilla/5.0"}
	cw := &countWriter{w: bw}
	enc := json.NewEncoder(cw)
	enc.SetEscapeHTML(false)
	for i := range opts.Conversations {
		turns := 1 + r.IntN(opts.MaxTurns)
		lang := languages[r.IntN(len(languages))]
		rec := record{
			ConversationHash: fmt.Sprintf("%016x%016x", r.Uint64(), uint64(i)),
			Model:            "gpt-4-0314", Timestamp: "2023-04-09 00:23:46+00:00",
			Turn: turns, Language: lang, State: "Alberta", Country: "Canada",
			HashedIP: "e49e258fbabeb7e0916d44b43e30ad77", Header: header,
			Toxic: r.IntN(50) == 0, Redacted: r.IntN(40) == 0,
		}
		for t := range turns {
			id := int64(i*100 + t)
			ts := "2023-04-09 00:24:00+00:00"
			rec.Conversation = append(rec.Conversation,
				message{Content: text(r, 20+r.IntN(400)), Role: "user", Language: lang, Header: header, TurnIdentifier: id, Country: "Canada"},
				message{Content: text(r, 300+r.IntN(2500)), Role: "assistant", Language: lang, Header: header, TurnIdentifier: id, Timestamp: &ts, Country: "Canada"},
			)
			rec.OpenAIModeration = append(rec.OpenAIModeration, map[string]any{"flagged": false}, map[string]any{"flagged": false})
			rec.DetoxifyModeration = append(rec.DetoxifyModeration, map[string]any{"toxicity": 0.001}, map[string]any{"toxicity": 0.0005})
		}
		if err := enc.Encode(&rec); err != nil {
			return cw.n, err
		}
	}
	err := bw.Flush()
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// text makes roughly n bytes of word salad, sometimes with a code block.
func text(r *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	if n > 400 && r.IntN(5) == 0 {
		b.WriteString("```python\ndef f(x):\n    return [v * 2 for v in x if v > 0]\n```\n")
	}
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		switch r.IntN(14) {
		case 0:
			b.WriteString(". ")
		case 1:
			b.WriteString(",\n")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}
