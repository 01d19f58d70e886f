package compint

import (
	_ "embed"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
	"github.com/ac3/ac3/pipeline/prompt"
)

//go:embed prompts/retention.tmpl
var retentionText []byte

// RetentionPrompt returns the parsed retention-judge prompt. Its Version
// belongs in the unit keys of retention calls.
func RetentionPrompt() *prompt.Template {
	return prompt.MustParse("compint_retention", retentionText)
}

// retentionTag names the section holding the judge's YES or NO.
const retentionTag = "retained"

type retentionData struct {
	Nonce, Open, Close string
	Constraint         string
	Context            []conv.Message
}

// RetentionMessages renders the retention judge's request: is sc (as
// written, without framing, as the reference judge is given it) present in
// context, which should be what a strategy kept before the probe turn (see
// RetentionContext). The Tagger's nonce is derived from the SC and every
// message, so a verdict pasted into the context cannot pose as the judge's.
//
// The request is laid out for providers' prompt caches: fixed instructions,
// then the context, then the SC and the answer's nonce-tagged form. Nothing
// before the SC depends on anything but the context, so requests about one
// context share everything up to the SC, and requests about contexts that
// begin alike (one base context under SCs injected further down, or
// strategies that keep its beginning) share that beginning.
func RetentionMessages(sc SC, context []conv.Message) ([]conv.Message, parse.Tagger, error) {
	return Prompts{}.RetentionMessages(sc, context)
}

// RetentionSpec declares the retention judge's prompt for a user's template
// that replaces it (stages.compint.prompts.retention in the config): it is
// rendered with .Constraint (the SC as written), .Context (the messages a
// strategy kept), which it must show, and .Nonce; the answer's form (YES or
// NO in a tagged block) is ac3's. A template that shows the context before
// anything that varies with the SC lets providers' prompt caches serve it.
func RetentionSpec() prompt.Spec {
	return prompt.Spec{Name: "compint_retention", Data: reflect.TypeFor[retentionData](), Needs: []string{"Constraint", "Context"}, Contract: []string{"Open", "Close"}}
}

// RetentionMessages is the package's RetentionMessages with p's retention
// prompt.
func (p Prompts) RetentionMessages(sc SC, context []conv.Message) ([]conv.Message, parse.Tagger, error) {
	parts := []string{"compint retention", sc.Text}
	for _, m := range context {
		parts = append(parts, string(m.Role), m.Content)
	}
	tg := parse.NewTagger(parts...)
	d := retentionData{Nonce: tg.Nonce(), Open: tg.Open(retentionTag), Close: tg.Close(retentionTag), Constraint: sc.Text, Context: context}
	contract := "Reply with one tagged block holding only the word YES or the word NO, exactly like one of these:\n" +
		d.Open + "YES" + d.Close + "\n" + d.Open + "NO" + d.Close
	msgs, err := p.RetentionTemplate().RenderAnswer(d, contract)
	if err != nil {
		return nil, tg, fmt.Errorf("rendering the retention prompt for SC %d: %w", sc.ID, err)
	}
	return msgs, tg, nil
}

// ErrNotYesNo is returned (wrapped) by ParseRetention when the tagged
// section holds something other than YES or NO.
var ErrNotYesNo = errors.New("retention verdict is not YES or NO")

// ParseRetention reads the judge's verdict from text: the last section
// tagged with tg's nonce (outside any reasoning trace) must hold YES or NO
// and nothing else, in any case, optionally with a final full stop or
// emphasis marks around it. It returns a *parse.MissingError when there is
// no such section and ErrNotYesNo (wrapped) for any other content.
func ParseRetention(tg parse.Tagger, text string) (bool, error) {
	sec, err := tg.Parse(text, []string{retentionTag})
	if err != nil {
		return false, err
	}
	v := sec[retentionTag]
	for {
		t := strings.TrimSpace(strings.TrimSuffix(strings.Trim(v, wrapping), "."))
		if t == v {
			break
		}
		v = t
	}
	switch strings.ToUpper(v) {
	case "YES":
		return true, nil
	case "NO":
		return false, nil
	}
	return false, fmt.Errorf("%w: %q", ErrNotYesNo, clip(sec[retentionTag], 80))
}

// RetentionParser returns ParseRetention for llm.CallParsed.
func RetentionParser(tg parse.Tagger) func(llm.Response) (bool, error) {
	return func(r llm.Response) (bool, error) { return ParseRetention(tg, r.Text) }
}

// NearOverlap is the Evidence.Overlap from which a match counts as
// near-exact.
const NearOverlap = 0.8

// Evidence is the cheap, model-free check reported beside the judge: does
// the SC's wording survive in the context?
type Evidence struct {
	// Exact: the SC's words appear in the context in order and next to each
	// other, after normalising (case, punctuation, spacing, apostrophes).
	Exact bool `json:"exact"`
	// Overlap is the largest share of the SC's words (counted with
	// multiplicity) found within one stretch of the context a quarter
	// longer than the SC, so reworded or lightly edited restatements still
	// score high while words scattered across the context do not.
	Overlap float64 `json:"overlap"`
	// Span is the text of that best stretch (clipped to 300 characters).
	Span string `json:"span,omitempty"`
}

// Near reports whether the match is exact or near-exact.
func (e Evidence) Near() bool { return e.Exact || e.Overlap >= NearOverlap }

// MatchEvidence looks for sc's text (as written, without framing) in the
// context's messages. It runs in time linear in the context.
func MatchEvidence(sc string, context []conv.Message) Evidence {
	want := wordTokens(sc)
	if len(want) == 0 {
		return Evidence{}
	}
	var b strings.Builder
	for i, m := range context {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Content)
	}
	text := b.String()
	have := wordTokens(text)
	if len(have) == 0 {
		return Evidence{}
	}
	var e Evidence
	e.Exact = containsRun(have, want)

	need := map[string]int{}
	for _, t := range want {
		need[t.text]++
	}
	window := len(want) + len(want)/4
	count := map[string]int{}
	matched, best, bestStart := 0, -1, 0
	for i, t := range have {
		if n, ok := need[t.text]; ok {
			if count[t.text] < n {
				matched++
			}
			count[t.text]++
		}
		if j := i - window; j >= 0 {
			if n, ok := need[have[j].text]; ok {
				count[have[j].text]--
				if count[have[j].text] < n {
					matched--
				}
			}
		}
		if matched > best {
			best, bestStart = matched, max(0, i-window+1)
		}
	}
	e.Overlap = float64(best) / float64(len(want))
	if best > 0 {
		end := min(len(have), bestStart+window) - 1
		e.Span = clip(text[have[bestStart].start:have[end].end], 300)
	}
	return e
}

func containsRun(have, want []token) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		ok := true
		for j := range want {
			if have[i+j].text != want[j].text {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// token is a normalised word and where it sits in the original text.
type token struct {
	text       string
	start, end int // byte offsets
}

// wordTokens splits s into lower-cased runs of letters and digits.
// Apostrophes inside a word are dropped rather than split on, so "don't"
// and "don’t" both give "dont". A token that is already lower case shares
// s's memory, so long contexts cost few allocations.
func wordTokens(s string) []token {
	var out []token
	start, end, apos := -1, 0, false
	flush := func() {
		if start >= 0 {
			w := s[start:end]
			if apos {
				w = strings.NewReplacer("'", "", "’", "").Replace(w)
			}
			out = append(out, token{strings.ToLower(w), start, end})
		}
		start, apos = -1, false
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
			end = i + w
		case (r == '\'' || r == '’') && start >= 0 && nextIsLetter(s[i+w:]):
			apos = true // inside a word: dropped by flush
		default:
			flush()
		}
		i += w
	}
	flush()
	return out
}

func nextIsLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r)
}
