package annotator

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

// Entry is one message of a transcript shown to an annotator.
type Entry struct {
	// Tag names the message in the answer's terms: "system"; "ku" or "ka"
	// for u_{t-k} or a_{t-k}; the caller's tag for u_t; else the role (a
	// tool message, say).
	Tag string
	// Label names the message by side and round ("u3", "a3"; "system"; the
	// tag for u_t tagged "now" and for entries the caller adds), which,
	// unlike Tag, stays the same from one turn's transcript to the next:
	// transcripts shown with labels share their beginning across turns.
	Label   string
	Role    string
	Turn    int // the round the message belongs to; 0 for the system message
	Content string
}

// Transcript is the data transcript prompts are rendered with.
type Transcript struct {
	Nonce    string // the tagger's nonce: the transcript and the answer carry it
	Turn     int
	Messages []Entry
	// Refs are the earlier messages of Messages whose tag counts back from
	// u_t ("1a", "2u"), so that a prompt that shows labels can tell the
	// model, after the transcript, which tag each label has at this turn.
	Refs   []Entry
	Answer string // the form of the answer, laid out for the output
	JSON   bool   // the answer is one JSON object (json_schema output)
}

// TranscriptSpec declares a transcript prompt (classify, pollution) for
// users who replace it: it is rendered with a Transcript, must show the
// messages, and the answer's form (Answer, JSON) is ac3's.
func TranscriptSpec(name string) prompt.Spec {
	return prompt.Spec{Name: name, Data: reflect.TypeFor[Transcript](), Needs: []string{"Messages"}, Contract: []string{"Answer", "JSON"}}
}

// Contract is the answer's form as ac3 states it at the end of a user's
// template (prompt.Template.RenderAnswer), in the words the shipped
// prompts use: answer is the form laid out for the output (Layout), json
// whether it is json_schema output.
func Contract(json bool, answer string) string {
	if json {
		return "Reply with exactly one JSON object of this shape:\n" + answer
	}
	return "Reply with exactly one section, opened and closed with these tags, holding one JSON object:\n" + answer
}

// Layout is what a stage's answer form shows the model (parse.Object and
// parse.Sections are Layouts).
type Layout interface {
	Layout(out parse.Output, tg parse.Tagger) string
}

// History returns C_t of c as transcript entries: the system message, every
// message of rounds 1..t-1 and u_t, tagged by distance back from t, with u_t
// tagged nowTag. Each content is clipped to maxChars (see Clip) so one pasted
// log cannot blow the prompt up.
func History(c *conv.Conversation, t, maxChars int, nowTag string) ([]Entry, error) {
	turns := c.Turns()
	if t < 1 || t > len(turns) {
		return nil, fmt.Errorf("conversation %s has no turn %d", c.ID, t)
	}
	var es []Entry
	if c.System != "" {
		es = append(es, Entry{Tag: "system", Label: "system", Role: "system message", Content: Clip(c.System, maxChars)})
	}
	for _, tr := range turns[:t] {
		d := t - tr.Index
		end := tr.End
		if d == 0 {
			end = tr.User + 1 // C_t stops at u_t
		}
		for i := tr.User; i < end; i++ {
			m := c.Messages[i]
			e := Entry{Role: string(m.Role), Turn: tr.Index, Content: Clip(m.Content, maxChars)}
			round := strconv.Itoa(tr.Index)
			switch {
			case i == tr.User && d == 0:
				e.Tag, e.Label = nowTag, "u"+round
				if nowTag == "now" {
					e.Label = nowTag
				}
			case i == tr.User:
				e.Tag, e.Label = strconv.Itoa(d)+"u", "u"+round
			case m.Role == conv.Assistant:
				e.Tag, e.Label = strconv.Itoa(d)+"a", "a"+round
			default:
				e.Tag, e.Label = string(m.Role), string(m.Role)
			}
			es = append(es, e)
		}
	}
	return es, nil
}

// RenderTranscript renders tmpl with a Transcript of es for round t, the
// answer laid out by form for out. The nonce is derived from parts, which
// must hold every content shown (RenderHistory passes the whole
// conversation), so none of them can carry it; the returned tagger reads
// the answer.
func RenderTranscript(tmpl *prompt.Template, t int, es []Entry, parts []string, out parse.Output, form Layout) ([]conv.Message, parse.Tagger, error) {
	var refs []Entry
	for i := range es {
		if es[i].Label == "" {
			es[i].Label = es[i].Tag // an entry the caller added
		}
		if d, side := strings.TrimRight(es[i].Tag, "ua"), strings.TrimLeft(es[i].Tag, "0123456789"); d != "" && d != "0" && (side == "u" || side == "a") {
			refs = append(refs, es[i])
		}
	}
	// Nearest first, as the tags count.
	slices.Reverse(refs)
	return render(tmpl, out, form, parts, func(nonce, answer string, json bool) any {
		return Transcript{Nonce: nonce, Turn: t, Messages: es, Refs: refs, Answer: answer, JSON: json}
	})
}

// RenderHistory renders a's transcript prompt for round t of c: History
// with u_t tagged nowTag, then the entries after (the reply pollution
// reviews), the answer a W in the form AnswerForm[W](stage) lays out.
func RenderHistory[W any](a *LLM, stage string, c *conv.Conversation, t int, nowTag string, after ...Entry) ([]conv.Message, parse.Tagger, error) {
	es, err := History(c, t, a.MaxChars, nowTag)
	if err != nil {
		return nil, parse.Tagger{}, fmt.Errorf("rendering %s prompt: %w", stage, err)
	}
	parts := ConversationParts(c)
	for _, e := range after { // a reply under review need not be c's own
		parts = append(parts, e.Content)
	}
	return RenderTranscript(a.Prompt(), t, append(es, after...), parts, a.Output, AnswerForm[W](stage))
}

// ConversationParts is every text of c: the nonce of a transcript prompt is
// derived from them all. It is then the same for every turn of c, so the
// transcript's opening tag, which carries it, does not end the prefix the
// turns' prompts share, yet whoever wrote c cannot know it.
func ConversationParts(c *conv.Conversation) []string {
	parts := make([]string, 0, len(c.Messages)+1)
	parts = append(parts, c.System)
	for _, m := range c.Messages {
		parts = append(parts, m.Content)
	}
	return parts
}

// Clip keeps the head (two thirds) and the tail (one third) of s when it is
// longer than n bytes, cut on rune boundaries, and says how much it left
// out. n <= 0 keeps s whole.
func Clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	head, start := n*2/3, len(s)-n/3
	for head > 0 && !runeStart(s[head]) {
		head--
	}
	for start < len(s) && !runeStart(s[start]) {
		start++
	}
	return s[:head] + fmt.Sprintf("\n[… %d characters left out …]\n", start-head) + s[start:]
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }
