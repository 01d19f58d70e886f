package classify

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// HeuristicVersion changes whenever the cue lists or the decision rule
// change; it is part of the heuristic variant's version.
const HeuristicVersion = "classify-heuristic@v1"

// cue is one lexical signal. Feedback cues mark corrections and error
// reports; back cues mark a message that leans on earlier turns without
// necessarily correcting them.
type cue struct {
	name   string
	re     *regexp.Regexp
	weight int
}

// cues holds compiled regular expressions; Heuristic is a value so a run
// compiles them once and there is no package-level state.
type cues struct {
	feedback []cue
	back     []cue
	pronoun  *regexp.Regexp
	opener   *regexp.Regexp
	first    *regexp.Regexp
}

func newCues() *cues {
	m := func(name, expr string, w int) cue {
		return cue{name: name, re: regexp.MustCompile(`(?i)` + expr), weight: w}
	}
	return &cues{
		feedback: []cue{
			m("says it fails", `\b(doesn'?t|does not|didn'?t|did not|won'?t|can'?t|cannot|isn'?t|is not|wasn'?t|was not|aren'?t) (work|run|compile|load|print|show|display|help|exist|correct|right|accurate|match|what i)`, 2),
			m("says it is wrong", `\bnot (working|correct|right|accurate|what i|quite)\b`, 2),
			m("names a fault", `\b(wrong|incorrect|mistakes?|typos?|bugs?|buggy|broken|fails?|failed|failing|crash(es|ed)?|inaccurate)\b`, 1),
			m("pastes an error", `\b(error|exception|traceback|undefined|segfault|warning:)`, 1),
			m("asks for something instead", `\b(instead|rather than)\b`, 2),
			m("points at the assistant's miss", `\byou (forgot|missed|ignored|didn'?t|did not|left out|keep|still|skipped|misunderstood|changed|removed|only|used)\b`, 2),
			m("restates an earlier instruction", `\b(i (said|asked|told you|wanted|meant|specified)|as i said)\b`, 2),
			m("repeats a complaint", `\b(still|again)\b`, 1),
			m("opens with no", `^\s*(no|nope|not quite|that's not|this is not|that is not)\b`, 2),
			m("judges the size or tone", `\btoo (long|short|complex|complicated|simple|formal|informal|verbose|vague|generic|much|little|many|few)\b`, 2),
			m("says what it should be", `\b(should (be|have|not|use|return|print)|shouldn'?t|supposed to|expected)\b`, 1),
			m("asks to change the previous answer", `\b(fix|correct|change|modify|adjust|revise|rewrite|shorten|simplify|remove|replace|update|redo) (it|this|that|the|your|them|these|those)\b`, 2),
			m("asks for a different form", `\bmake (it|this|that|them|the \w+) (more|less|shorter|longer|simpler|clearer|formal|casual)\b`, 2),
		},
		back: []cue{
			m("mentions the assistant's work", `\byour (code|answer|response|reply|solution|example|version|script|function|regex|query|pattern|command|suggestions?|explanation|list|text|essay|output|draft|program|query|story|poem|table|last|previous|first)\b`, 2),
			m("points above", `\b(above|previous|earlier|last (one|answer|response|code|part|step|point))\b`, 2),
			m("continues", `\b(continue|go on|keep going|carry on|finish (it|the)|the rest|more (details?|examples?|ideas?|options?)|elaborate|expand on|tell me more|another one|one more|next (step|part|one|chapter))\b`, 2),
			m("follows up on a point", `\b(what about|how about|and if|what if|step \d|point \d|part \d|option \d|number \d|the (first|second|third|last) (one|option|point|step|example|part))\b`, 2),
			m("refers to the code or text", `\bthe (code|script|function|program|class|query|example|answer|story|essay|list|text|table|email|letter|poem|article|paragraph|summary|plan|outline|output|result|formula|equation|solution)\b`, 1),
			m("asks about a part of it", `\bexplain (it|that|this|each|more|why|the (code|pattern|steps?|output|result))\b`, 2),
			m("says that you said", `\byou (said|wrote|mentioned|suggested|gave|provided|used|showed)\b`, 2),
		},
		pronoun: regexp.MustCompile(`(?i)\b(it|that|this|these|those|them)\b`),
		opener:  regexp.MustCompile(`(?i)^\s*(and|also|but|so|then|now|ok|okay|thanks|thank you|thx|great|cool|nice|perfect|good|yes|yeah|sure|why|can you explain|what does|what do you mean|by the way|btw|fyi|add)\b`),
		first:   regexp.MustCompile(`(?i)\b(your|the) first (answer|response|reply|code|version|message|one)\b`),
	}
}

// Heuristic labels user turns from lexical cues alone. It needs no model
// and is deterministic. Build it once with NewHeuristic and reuse it; it is
// safe for concurrent use.
type Heuristic struct {
	c *cues
}

// NewHeuristic returns the rule-based annotator.
func NewHeuristic() *Heuristic { return &Heuristic{c: newCues()} }

// Label labels u_t of c (t >= 2). It reports false when c has no turn t.
//
// The rule, in order: enough correction or error cues (two weak ones or one
// strong one) make feedback; any reference back, a continuation cue,
// a conversational opener or a very short message make no_feedback;
// otherwise the message is taken as a new, self-contained request.
func (h *Heuristic) Label(c *conv.Conversation, t int) (Label, bool) {
	u, ok := c.UserTurn(t)
	if !ok {
		return Label{}, false
	}
	return h.LabelText(u.Content, t), true
}

// LabelText labels a user message that is turn t of its conversation.
func (h *Heuristic) LabelText(text string, t int) Label {
	// Pasted code and logs dominate long messages; the user's own words are
	// mostly in the first lines, so cues are read from the prose only.
	prose := stripCode(text)
	low := strings.ToLower(prose)
	words := len(strings.Fields(low))

	fb, fbCues := score(h.c.feedback, low)
	back, backCues := score(h.c.back, low)
	// Pronouns point back only in short messages or at the very start; a
	// longer new request uses "it" and "that" about its own subject.
	if head := firstWords(low, 3); h.c.pronoun.MatchString(head) || (words <= 10 && h.c.pronoun.MatchString(low)) {
		back++
		backCues = append(backCues, "uses a pronoun for something earlier")
	}
	if h.c.opener.MatchString(low) {
		back++
		backCues = append(backCues, "opens like a follow-up")
	}
	if words <= 5 {
		back++
		backCues = append(backCues, "very short")
	}

	l := Label{Annotator: "heuristic", Refs: []string{}}
	switch {
	case fb >= 2:
		l.Type = Feedback
		l.Confidence = conf(0.55, fb+back)
		l.Reason = "correction cues: " + strings.Join(fbCues, ", ")
	case back >= 1:
		l.Type = NoFeedback
		l.Confidence = conf(0.5, back)
		l.Reason = "refers back without a concrete correction: " + strings.Join(backCues, ", ")
	default:
		l.Type = NewAsk
		l.Confidence = 0.6
		l.Reason = "no reference to earlier turns; reads as a new request"
	}
	if l.Type != NewAsk {
		l.Refs = []string{"1a"}
		if t > 2 && h.c.first.MatchString(low) {
			l.Refs = []string{fmt.Sprintf("%da", t-1)}
		}
	}
	return l
}

func score(cs []cue, text string) (int, []string) {
	n := 0
	var names []string
	for _, c := range cs {
		if c.re.MatchString(text) {
			n += c.weight
			names = append(names, c.name)
		}
	}
	return n, names
}

func conf(base float64, n int) float64 {
	return min(0.9, base+0.05*float64(n))
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// stripCode drops fenced code blocks and lines that look like code or a
// log (indented, or mostly symbols), keeping the user's prose.
func stripCode(s string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(s, "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}
