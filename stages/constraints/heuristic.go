package constraints

import (
	"regexp"
	"strings"
	"unicode"
)

// HeuristicVersion changes whenever the scope phrases, type cues or rules
// change; it is part of the heuristic variant's version.
const HeuristicVersion = "constraints-heuristic@v2"

// Heuristic finds constraints from scope phrases. Build it with NewHeuristic
// and reuse it; it is safe for concurrent use.
type Heuristic struct {
	scope     []*regexp.Regexp
	scopeOnly *regexp.Regexp
	notRule   *regexp.Regexp
	directive *regexp.Regexp
	lead      *regexp.Regexp
	clauseSep *regexp.Regexp
	trail     *regexp.Regexp
	types     []typeCue
}

type typeCue struct {
	typ string
	re  *regexp.Regexp
}

// NewHeuristic returns the rule-based extractor.
func NewHeuristic() *Heuristic {
	re := func(s string) *regexp.Regexp { return regexp.MustCompile(`(?i)` + s) }
	const session = `(session|conversation|chat|thread)`
	return &Heuristic{
		scope: []*regexp.Regexp{
			re(`\bfrom (now|here|this point)( on| onwards?| forward)?\b`),
			re(`\bgoing forward\b`),
			re(`\bfor the (rest|remainder) of\b`),
			re(`\b(throughout|for) (this|the|our) (whole |entire )?` + session),
			re(`\b(in|for) (all|every|each|any) (of )?(your )?(future |later |subsequent |following )?(replies|responses|answers|messages|reply|response|answer|message)\b`),
			re(`\bevery (time|reply|response|answer|message)\b`),
			re(`\beach time\b`),
			re(`\bwhenever\b`),
			re(`\b(always|never)\b`),
			re(`\b(don'?t|do not)\b.*\buntil\b`),
			re(`\buntil i (say|tell|ask)\b`),
			re(`\bat all times\b`),
			re(`\b(in|for) (the )?future\b`),
			re(`^\s*(please )?(don'?t|do not) [^,]*\bany\b`),
			re(`\b(for today|for this session|rule for (today|this session|the session))\b`),
			re(`(^|[:;,]\s*)(when|if) you (recommend|give|cite|write|answer|reply|respond|finish|suggest|mention|quote|use|show|send|explain|provide)\b[^,]*,`),
			re(`(^|[:;,]\s*)before you (answer|reply|respond|run|send|make|start|write|do|give)\b`),
		},
		clauseSep: re(`[,:]\s+`),
		scopeOnly: re(`^\s*(please,? )?(for the (rest|remainder) of (this|the|our) ` + session + `|from now on|going forward|from here on( out)?)\s*$`),
		// A scope word that describes the world rather than directs the
		// assistant: "it always crashes", "I never used Rust", "you always
		// forget".
		notRule:   re(`\b(i|it|he|she|they|we|this|that|which|there|who|you|people|users?|everyone|nothing|something)('ve| have| has| had| would| will| 've)?\s+(always|never)\b|\b(every time|each time|whenever) (i|we) (run|try|open|start|click|use|call|load|execute|compile)\b.*\b(crash|crashes|error|fails?|breaks?|get|see)\b|\b(always|never) (been|worked|works|work|seen|heard|had|knew|know|liked|wanted|thought|understood|gets|got|is|was|were|are)\b`),
		directive: re(`^\s*(please |also |and |but |so |oh,? |ok,? |okay,? |btw,? |one more thing,? )*(don'?t|do not|never|always|stop|keep|use|write|reply|respond|answer|give|show|make|add|put|include|avoid|end|start|begin|format|ask|tell|wait|send|draft|pick|prefer|choose|cite|restate|search|check|run|be|call|refer|address|explain|list|mention|from now on|going forward|for the|when you|whenever|if you|before you|every time|each time|in all|in every|at all times|you (should|must|need to|have to|are to)|i (want|need|would like|'d like) you to|i prefer|remember|make sure|let me|do (that|this|it|the same)|keep doing)\b`),
		lead:      re(`^\s*((please|also|and|but|so|oh|ok|okay|btw|one more thing|important|note|this is an important constraint)[,:]?\s+)*((for the (rest|remainder) of (this|the|our) ` + session + `|from now on|going forward|from here on( out)?|in the future|for the future)[,.:]?\s*)?`),
		trail:     re(`[,;]?\s*(from now on|going forward|for the (rest|remainder) of (this|the|our) ` + session + `|in (all|every) (of )?(your )?(future )?(replies|responses|answers|messages))\s*[.!]*\s*$`),
		types: []typeCue{
			{"information", re(`\bmy (full |real |last |first )?(name|phone|number|address|e-?mail address|password|birthday|age|location|details|data|identity|employer|account)\b|\b(confidential|private|personal (info|information|data|details)|sensitive)\b|\b(share|reveal|disclose|leak|store|save|log|remember)\b.*\b(about me|my)\b`)},
			{"action", re(`\b(confirm|confirmation|go-?ahead|permission|approv(e|al)|on my behalf|send (any|an|the|a)?\s*(e-?mails?|messages?)|run (any |a |the )?commands?|make (any )?changes|delete|execute|commit|push|deploy|install|purchase|buy)\b`)},
			{"process", re(`\b(before (you )?(answer|answering|respond|responding|reply|replying|start|starting|write|writing)|restate|web search|search|look (it |things )?up|double[- ]check|verify|step[- ]by[- ]step|think (it )?through|clarifying questions?|when you finish|after you (finish|complete)|what you did|test (it|the code|your code)|run the tests?|until)\b`)},
			{"preference", re(`\b(prefer|preferred|rather than|over (peer|the)|instead of|pick|choose|favou?r|primary source|metric|imperial|arxiv|celsius|fahrenheit|british|american) ?`)},
			{"output", re(`\b(reply|replies|respond|response|answers?|format|bullet|markdown|table|json|words?|digits|numbers?|sentences?|paragraphs?|short|concise|brief|length|tone|language|english|spanish|french|german|emojis?|code blocks?|comments|headings?|lowercase|uppercase|caps|type hints|docstrings)\b`)},
		},
	}
}

// Extract returns the constraints the heuristic finds in u_t, deduplicated
// against the input's registry, as (new, registry as of t).
func (h *Heuristic) Extract(in Input) (added, registry []Constraint) {
	return merge(in.registry, h.Find(in.user), in.turn)
}

// Find returns the constraints stated in a user message (turn not set).
func (h *Heuristic) Find(text string) []Constraint {
	var out []Constraint
	sents := sentences(stripCode(text))
	for i := 0; i < len(sents); i++ {
		s := sents[i]
		// "For the rest of this session. Never ..." puts the scope in a
		// sentence of its own: join it to the next one.
		evidence := s
		if h.scopeOnly.MatchString(strings.TrimRight(s, ".!:; ")) && i+1 < len(sents) {
			evidence = s + " " + sents[i+1]
			s = strings.TrimRight(s, ".!:; ") + ", " + sents[i+1]
			i++
		}
		at, ok := h.rule(s)
		if !ok {
			continue
		}
		out = append(out, Constraint{Text: h.canonical(s[at:]), Evidence: strings.TrimSpace(evidence), Type: h.guessType(s)})
	}
	return out
}

// rule reports whether sentence s states a standing rule, and where the
// rule's own clause starts in s (after a preamble such as "Quick rule for
// today:" or "I'm from Germany, so").
func (h *Heuristic) rule(s string) (int, bool) {
	trim := strings.TrimSpace(s)
	if trim == "" || strings.HasSuffix(trim, "?") {
		return 0, false
	}
	scoped := false
	for _, re := range h.scope {
		if re.MatchString(trim) {
			scoped = true
			break
		}
	}
	if !scoped {
		return 0, false
	}
	if h.notRule.MatchString(trim) && !strings.Contains(strings.ToLower(trim), "from now on") {
		return 0, false
	}
	// The clause must address the assistant: open like an instruction, or
	// carry the scope phrase up front ("I'm from Germany, so going forward,
	// use metric" qualifies through its second part).
	lead := len(s) - len(strings.TrimLeft(s, " \t"))
	starts := append([]int{0}, ends(h.clauseSep.FindAllStringIndex(trim, -1))...)
	for _, at := range starts {
		if h.directive.MatchString(trim[at:]) {
			return lead + at, true
		}
	}
	return 0, false
}

func ends(locs [][]int) []int {
	out := make([]int, len(locs))
	for i, l := range locs {
		out[i] = l[1]
	}
	return out
}

// canonical turns a clause into the registry sentence: leading fillers and
// scope phrases dropped, first letter capitalised, one final period.
func (h *Heuristic) canonical(s string) string {
	s = strings.TrimSpace(s)
	s = h.lead.ReplaceAllString(s, "")
	s = h.trail.ReplaceAllString(s, "")
	s = strings.TrimSpace(strings.TrimRight(s, ".!;:, "))
	if s == "" {
		return ""
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r) + "."
}

func (h *Heuristic) guessType(s string) string {
	for _, c := range h.types {
		if c.re.MatchString(s) {
			return c.typ
		}
	}
	return "preference"
}

// sentences splits text at sentence ends and line breaks, keeping quoted
// text ("End with: "Thanks."") in one piece.
func sentences(text string) []string {
	var out []string
	var b strings.Builder
	inQuote := false
	flush := func() {
		if s := strings.TrimSpace(b.String()); s != "" {
			out = append(out, s)
		}
		b.Reset()
	}
	rs := []rune(text)
	for i, r := range rs {
		switch {
		case r == '"' || r == '“' || r == '”':
			inQuote = !inQuote
			b.WriteRune(r)
		case r == '\n':
			inQuote = false
			flush()
		case !inQuote && (r == '.' || r == '!' || r == '?' || r == ';'):
			b.WriteRune(r)
			// "e.g." and "3.5" are not sentence ends.
			if i+1 < len(rs) && !unicode.IsSpace(rs[i+1]) {
				continue
			}
			flush()
		default:
			b.WriteRune(r)
		}
	}
	flush()
	return out
}

// stripCode drops fenced code blocks, where "always" and "never" are code.
func stripCode(s string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
