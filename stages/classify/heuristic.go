package classify

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/ac3/ac3/pipeline/conv"
)

// HeuristicVersion changes whenever the cue lists or the decision rule
// change; it is part of the heuristic variant's version, so stored units of
// an older rule set are not mixed with new ones.
const HeuristicVersion = "classify-heuristic@v2"

// Heuristic labels user turns from lexical cues and the shape of the
// previous assistant message. It needs no model and is deterministic.
//
// It abstains (type Unknown) when its rules do not clearly apply: a message
// that is not English, or one where the cues are missing or point two ways.
// HeuristicQuality says how often it answers and how often it is right on
// real WildChat turns. Build it once with NewHeuristic and reuse it; it is
// safe for concurrent use.
type Heuristic struct {
	c *cues
}

// NewHeuristic returns the rule-based annotator.
func NewHeuristic() *Heuristic { return &Heuristic{c: newCues()} }

// cue is one lexical signal with its weight. A command cue does not count
// inside a purpose clause ("... to make it more fun"), where it states an
// aim rather than asks for a change.
type cue struct {
	name    string
	re      *regexp.Regexp
	weight  int
	command bool
}

// cues holds the compiled expressions; Heuristic is a value so a run
// compiles them once and there is no package-level state.
type cues struct {
	// feedback cues say what is wrong with an earlier answer or what to
	// change in it. judge cues reject the answer outright; they stand even in
	// a long message that otherwise reads as a new request.
	judge, feedback []cue
	// back cues say the message leans on an earlier turn without asking
	// for a change.
	back []cue
	// artifact names a part of an earlier answer ("the code", "page 6");
	// pronoun is "it", "that", ... right after an editing verb.
	artifact, pronoun *regexp.Regexp
	// edit is an editing verb; as a command ("change the name", not "to
	// make it") aimed at part of an answer it is feedback.
	edit *regexp.Regexp
	// editFirst is an editing verb opening a short message ("change X").
	editFirst *regexp.Regexp
	// objectIt finds "it" or "them" with the word before it; the function
	// objectIt decides from that word whether the pronoun is an object.
	objectIt *regexp.Regexp
	// pronounObject is "it", "that", ... as the object of a verb or
	// preposition, which in a short message points at an earlier turn.
	pronounObject *regexp.Regexp
	// request is the form of a request: a question, an imperative, "can
	// you", "I want", "how to".
	request *regexp.Regexp
	// wh opens a question.
	wh *regexp.Regexp
	// praise is a message that only thanks or praises.
	praise *regexp.Regexp
	// asks is an assistant message that asks the user for something
	// without a question mark.
	asks *regexp.Regexp
	// first names the first answer of the conversation.
	first *regexp.Regexp
	// noText is "this text" ending a message that brings no text.
	noText *regexp.Regexp

	// english and foreign are common function words, to tell English from
	// the other Latin-script languages of WildChat.
	english, foreign map[string]bool
}

func newCues() *cues {
	// Every expression runs on lower-cased text, so none needs (?i), which
	// would make matching several times slower.
	re := regexp.MustCompile
	m := func(name, expr string, w int) cue { return cue{name: name, re: re(expr), weight: w} }
	cmd := func(name, expr string, w int) cue { return cue{name: name, re: re(expr), weight: w, command: true} }
	// Apostrophes are optional throughout: WildChat users often drop them.
	const not = `(?:n'?t| not)`
	return &cues{
		judge: []cue{
			m("rejects the answer", `\b(not (good|right|correct|quite|what i|helpful|working)|(that|this|it) (is|was|'?s) (not|wrong|incorrect)|(thats|that'?s|this is|it'?s) not\b|wrong|incorrect|nope)\b`, 2),
			m("says it fails", `\b(does|did|is|was|wo|ca|are)`+not+` (work|run|compile|load|print|show|help|exist|match|change|do (anything|what))|\bnothing (happens|happened|changed|works)\b`, 2),
			m("repeats a complaint", `\b(it|this|that|they|the \w+) still (returns|gives|shows|prints|has|uses|says|contains|fails|crashes|is|does|doesn'?t|does not|isn'?t|is not)\b|\bstill (wrong|broken|the same|not)\b`, 2),
			m("says what the answer did, but", `\byou (used|chose|assumed|treated|wrote|gave|put|made|added|removed)\b[^?!\n]{0,60}\bbut\b`, 2),
			m("dislikes it", `\bi (do|did)?`+not+` (like|love|want) (it|this|that|the|your|how|them|these|those|any|whimsy)?|\bi (hate|dislike)\b|\bno more\b`, 2),
			m("points at the assistant's miss", `\byou (forgot|missed|ignored|skipped|misunderstood|misread|left out|keep|still|did`+not+`|have`+not+`|are`+not+`|got it wrong)\b`, 2),
			m("restates an earlier instruction", `\b(i (said|asked|told you|meant|specified|already)|as i said|like i said)\b`, 2),
			m("reports an error", `\b(error|exception|traceback|segfault|crash(es|ed)?|bug)\b`, 1),
		},
		feedback: []cue{
			m("asks for something instead", `\b(instead|rather than)\b`, 2),
			m("judges the size or tone", `\b(too (long|short|complex|complicated|simple|formal|informal|verbose|vague|generic|wordy|repetitive|much|little|many|few))\b`, 2),
			cmd("asks for a different degree", `\b(more|less) (clearly|clear|concise|detailed|specific|creative|formal|casual|professional|natural|engaging|fun|funny|serious|simple|simply|polite|friendly|persuasive|assertive|inviting|realistic|original|vivid|descriptive|precise|accurate|readable)\b|\b(shorter|longer|simpler|clearer)\b`, 2),
			m("asks for a different one", `\b(different|another|other) (one|version|page|name|title|word|sentence|line|ending|opening|intro|example|approach|way)\b|\banother one but\b|\b(do|try|write|give( me)?) (it )?(another|again)\b`, 2),
			m("says what it should be", `\b(should (be|have|not|use|return|print|say|include|provide)|should`+not+`|supposed to|it needs to|must be)\b`, 1),
			m("does not want something", `\b(do|does)`+not+` (want|need|use|include|add|mention)\b|\bdon'?t (use|include|add|mention|make|write|say)\b`, 1),
		},
		back: []cue{
			m("points at an earlier message", `\b(previous|last|earlier|above|prior) (message|answer|response|reply|one|code|version|text|output|list|point)\b|\bthe above\b|\bas above\b`, 2),
			m("mentions the assistant's work", `\byour (code|answer|response|reply|solution|example|version|script|function|suggestions?|explanation|list|text|essay|output|draft|program|story|poem|table|plan|design|idea|ideas|proposal|recommendation|logic|advice)\b`, 2),
			m("says that you said", `\byou (said|wrote|mentioned|suggested|gave|provided|showed|listed|recommended|described)\b`, 2),
			m("continues", `^\s*(continue|go on|keep going|carry on|more|again|next|and then|more please|please continue)\b|\b(continue|keep going|finish (it|the)|the rest of|tell me more|elaborate|expand on)\b`, 2),
			m("follows up on a point", `\b(what about|how about|and if|what if|(point|step|part|option|number|item|page|paragraph|chapter) (number )?\d+|the (first|second|third|fourth|fifth|last) (one|option|point|step|example|part|idea))\b`, 2),
			m("opens like a follow-up", `^\s*(so,|so (then|if|what|is|the|it|in|for)|and (what|how|why|if|the|does|is|can|also)|(now )?also\b|then,|but (what|how|why|if)|ok so|okay so|by the way|btw)|^\s*(thanks|thank you|thx|great|perfect|nice|cool|ok|okay)\b\W+\w`, 2),
			m("opens with now", `^\s*now\b`, 1),
			m("asks what was meant", `\bwhat (do|did) you mean\b`, 2),
			m("takes the logic over", `\b(take|use|apply|following) (this|that|the same) (logic|approach|idea|method|reasoning|formula)\b`, 2),
			m("puts the parts together", `\b(put|combine|merge) (it|them|these|those|everything|all)( all)? together\b`, 2),
		},
		artifact:      re(`\b(the (code|script|function|program|query|story|poem|song|list|name|title|sentence|paragraph|line|ending|opening|intro|introduction|conclusion|email|letter|essay|text|answer|response|plan|design|table|summary|prompt|version|output|result|example|topology|layout|draft|chapter|page|word|words)|(page|point|number|item|step|part|option|line|paragraph|chapter) \d+|the (first|second|third|fourth|fifth|last) (one|sentence|line|paragraph|page|part|point|word))\b`),
		pronoun:       re(`^(it|this|that|these|those|them)\b`),
		edit:          re(`\b(change|replace|fix|correct|modify|adjust|revise|rewrite|redo|remove|delete|drop|cut|shorten|simplify|rephrase|reword|swap|update|improve|edit|make)\b`),
		editFirst:     re(`^\s*(please )?(change|replace|fix|correct|modify|adjust|revise|rewrite|redo|remove|delete|drop|cut|shorten|simplify|rephrase|reword|swap|update|improve|edit|make it|different|another)\b`),
		objectIt:      re(`\b([a-z']+) (it|them)\b`),
		pronounObject: re(`\b(make|change|fix|explain|do|use|try|rewrite|translate|shorten|expand|continue|finish|redo|improve|describe|summari[sz]e|repeat|show|send|give me|about|of|with|on|like|for|know|mean) ((it|them)\b|(this|that|these|those)\s*([.?!,;:]|$))`),
		request:       re(`\?|(^|[.!?;]\s+)(please |pls |now |ok |okay )?(write|make|create|give|generate|explain|list|tell|show|describe|calculate|compute|summari[sz]e|translate|provide|draft|compose|find|design|suggest|recommend|compare|define|name|help|solve|convert|build|implement|code|plan|outline|rewrite|answer|analy[sz]e|prove|fix|let'?s|lets|how to|i (want|need|would like)|can you|could you|would you|will you)\b`),
		wh:            re(`^\s*(what|how|why|when|where|who|which|whose|is|are|was|were|do|does|did|can|could|would|will|should|has|have)\b`),
		praise:        re(`^\s*(thanks?( you)?|thx|ty|great|good|nice|cool|perfect|awesome|amazing|excellent|wonderful|brilliant|fantastic|ok|okay|got it|i see|that works|that helps|love it|well done|good job|you are (a |an )?(champion|genius|star|legend|lifesaver|the best))\b[^?]*$`),
		asks:          re(`\b(please (tell|provide|share|give|let me know|describe|specify)|let me know|what (is|are) (the|your) (topic|subject|idea|question)|tell me (more )?(about|what))\b`),
		first:         re(`\b(your|the) first (answer|response|reply|code|version|message|one)\b`),
		noText:        re(`\b(this|the following|my) (text|code|passage|paragraph|article|essay|script)\s*[:.]?\s*$`),
		english:       words("the a an and or to of in is are was were be been it this that these those you your i my me we our what how why when where which who can could would will should do does did not with for from about as at by on have has had if then than so just please there here any some more most very also"),
		foreign:       words("el los las del y con por para una qué cómo pero más muy también le les des du et est une qui pour dans sur mais pas je vous mes ces c'est nous avec der die das und ist nicht ich sie ein eine mit für auf wie was nein não uma com você isso che di sono questo della"),
	}
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// Label labels u_t of c (t >= 2). It reports false when c has no turn t.
func (h *Heuristic) Label(c *conv.Conversation, t int) (Label, bool) {
	var prev string
	for _, tr := range c.Turns() {
		if tr.Index == t {
			if tr.User > 0 && c.Messages[tr.User-1].Role == conv.Assistant {
				prev = c.Messages[tr.User-1].Content
			}
			return h.label(c.Messages[tr.User].Content, prev, t), true
		}
	}
	return Label{}, false
}

// LabelText labels a user message that is turn t of its conversation,
// without the previous assistant message.
func (h *Heuristic) LabelText(text string, t int) Label { return h.label(text, "", t) }

// The rule, in order:
//
//  1. A message that is not English is Unknown: the cues are English.
//  2. A message that is tool output sent back in an agent loop (JSON, a
//     list, "System: ...") continues the assistant's command: no_feedback.
//  3. Enough feedback cues in the user's own words (pasted text and code do
//     not count) make feedback. Cues that only state an instruction ("do
//     not use", "instead") in a message that brings its own material or is
//     a long request make it Unknown instead: it may be a new request with
//     constraints.
//  4. Otherwise, enough cues of leaning on an earlier turn make
//     no_feedback (Unknown if a weak feedback cue comes with them); so does a short reply to an assistant message that asked
//     the user something, a message that only thanks or praises, and a
//     "this text" that has no text with it.
//  5. Otherwise, a message that brings its own material (pasted text or
//     code), or is a complete request or question with nothing pointing
//     back, is a new_ask.
//  6. Anything else is Unknown: a weak cue alone, a bare statement, a very
//     short message with no context to read it by.
func (h *Heuristic) label(text, prev string, t int) Label {
	l := Label{Annotator: "heuristic", Refs: []string{}}
	abstain := func(why string) Label {
		l.Type, l.Confidence, l.Reason = Unknown, 0, why
		return l
	}
	m := h.read(text)
	if m.words == 0 {
		return abstain("empty message")
	}
	if !m.english {
		return abstain("not English; the rules read English cues")
	}
	if m.tool {
		return h.follow(l, t, m, NoFeedback, 0.7, "reads as tool output sent back to the assistant's command")
	}

	c := h.c
	low := m.ownLow
	judge, judgeCues := score(c.judge, low)
	fb, fbCues := score(c.feedback, low)
	back, backCues := score(c.back, low)
	short := m.ownWords <= 8
	artifact := c.artifact.MatchString(low) && !m.material
	// pointsBack: the message names or points at something it does not
	// contain, so it cannot be a self-contained request.
	pointsBack := artifact
	if artifact && commands(c.edit, low, nil) || commands(c.edit, low, c.pronoun) {
		fb += 2
		fbCues = append(fbCues, "asks to edit part of an earlier answer")
		pointsBack = true
	} else if short && c.editFirst.MatchString(low) {
		fb += 2
		fbCues = append(fbCues, "opens with an edit command")
		pointsBack = true
	}
	if short && (c.pronounObject.MatchString(low) || objectIt(c.objectIt, low)) {
		pointsBack = true
		if fb == 0 {
			back += 2
			backCues = append(backCues, "points at something earlier with a pronoun")
		}
	}
	if !m.material && c.noText.MatchString(strings.TrimSpace(low)) {
		back += 2
		backCues = append(backCues, `names "this text" but brings none`)
	}
	if c.praise.MatchString(low) && m.ownWords <= 12 && !strings.Contains(low, "?") {
		back += 2
		backCues = append(backCues, "only thanks or praises")
	}
	if prev != "" && !m.material && m.ownWords <= 12 && !strings.Contains(low, "?") && len(strings.Fields(prev)) <= 60 && (strings.Contains(prev, "?") || c.asks.MatchString(strings.ToLower(prev))) {
		back += 2
		backCues = append(backCues, "answers what the assistant asked")
	}

	// self counts evidence that the message stands on its own; strong
	// evidence (its own material, or a long request) outweighs an
	// instruction-like feedback cue.
	self, strong, selfCue := 0, false, ""
	switch {
	case m.material:
		self, strong, selfCue = 2, true, "brings its own text or code"
	case m.ownWords >= 25 && c.request.MatchString(low):
		self, strong, selfCue = 2, true, "a long, complete request"
	case m.ownWords >= 4 && !pointsBack && (c.request.MatchString(low) || c.wh.MatchString(low)):
		self, selfCue = 2, "a complete request or question with nothing pointing back"
	}
	selfCues := []string{selfCue}

	fbAll := judge + fb
	switch {
	case judge >= 2 || (fbAll >= 2 && !strong):
		return h.follow(l, t, m, Feedback, conf(0.55, fbAll+back), "feedback cues: "+strings.Join(append(judgeCues, fbCues...), ", "))
	case fbAll >= 2:
		return abstain("feedback cues (" + strings.Join(append(judgeCues, fbCues...), ", ") + ") in a message that also reads as a new request: " + strings.Join(selfCues, ", "))
	case back >= 2 && fbAll == 0:
		return h.follow(l, t, m, NoFeedback, conf(0.5, back), "leans on an earlier turn without asking for a change: "+strings.Join(backCues, ", "))
	case back >= 2:
		return abstain("leans on an earlier turn (" + strings.Join(backCues, ", ") + ") with a weak feedback cue (" + strings.Join(append(judgeCues, fbCues...), ", ") + ")")
	case self >= 2 && fbAll == 0 && back == 0:
		l.Type, l.Confidence = NewAsk, conf(0.55, self)
		l.Reason = "self-contained: " + strings.Join(selfCues, ", ")
		return l
	case fbAll > 0:
		return abstain("only a weak feedback cue: " + strings.Join(append(judgeCues, fbCues...), ", "))
	default:
		return abstain("no clear cue either way")
	}
}

// follow fills a follow-up label (feedback or no_feedback) with its refs:
// the previous assistant answer, the first one when the message names it,
// or the previous user turn when the message points at text it does not
// bring.
func (h *Heuristic) follow(l Label, t int, m message, typ string, confidence float64, reason string) Label {
	l.Type, l.Confidence, l.Reason = typ, confidence, reason
	l.Refs = []string{"1a"}
	switch {
	case t > 2 && h.c.first.MatchString(m.ownLow):
		l.Refs = []string{fmt.Sprintf("%da", t-1)}
	case strings.Contains(reason, `"this text"`):
		l.Refs = []string{"1u"}
	}
	return l
}

// message is what the rules read from one user message.
type message struct {
	ownLow   string // the user's own words, lower-cased
	ownWords int
	words    int  // all words, pasted material included
	material bool // pasted text or code beside the user's words
	tool     bool // tool output sent back in an agent loop
	english  bool
}

// read splits a message into the user's own words and pasted material, and
// decides whether it is English and whether it is tool output.
func (h *Heuristic) read(text string) message {
	var m message
	trim := strings.TrimSpace(text)
	m.words = len(strings.Fields(trim))
	if m.words == 0 {
		return m
	}
	own, material := splitMaterial(trim)
	m.material = material
	m.ownLow = strings.ToLower(own)
	m.ownWords = len(strings.Fields(m.ownLow))
	m.english = h.isEnglish(trim)
	m.tool = isToolOutput(trim)
	return m
}

// splitMaterial separates the user's own words from pasted material:
// fenced code blocks, indented lines, and a long tail after a colon that
// ends a short lead-in ("summarise this text: ..."). Cues are read from
// the user's words only, so a complaint quoted inside pasted text does not
// count as feedback.
func splitMaterial(s string) (own string, material bool) {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(s, "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") {
			fenced = !fenced
			material = true
			continue
		}
		if fenced || ((strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")) && trim != "") {
			material = material || trim != ""
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	own = b.String()
	// A lead-in of at most 60 words ending in a colon, followed by at least
	// 25 more words, introduces pasted material.
	if i := strings.IndexAny(own, ":："); i > 0 {
		lead, rest := own[:i], own[i:]
		rest = strings.TrimLeft(rest, ":：")
		if n := len(strings.Fields(lead)); n >= 1 && n <= 60 && len(strings.Fields(rest)) >= 25 && !strings.Contains(lead, "\n\n") {
			return lead, true
		}
	}
	return own, material
}

// isToolOutput reports whether a message reads as data an agent loop sent
// back: a JSON object or list, or a "System:" line, with no request of its
// own.
func isToolOutput(s string) bool {
	switch {
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		return true
	case strings.HasPrefix(strings.ToLower(s), "system:"):
		return true
	}
	return false
}

// isEnglish guesses whether s is English: mostly Latin letters, and not
// more common function words of another Latin-script language than of
// English. A short message with no function words at all counts as English
// (a bare topic such as "rhino mountain").
func (h *Heuristic) isEnglish(s string) bool {
	latin, other := 0, 0
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		if r < 0x250 {
			latin++
		} else {
			other++
		}
	}
	if latin+other == 0 {
		return true
	}
	if float64(other) > 0.2*float64(latin+other) {
		return false
	}
	en, fo := 0, 0
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	}) {
		if h.c.english[w] {
			en++
		}
		if h.c.foreign[w] {
			fo++
		}
	}
	return fo <= en
}

// objectIt reports whether "it" or "them" follows a word that makes it an
// object ("run it", "use them"), not a subject after an auxiliary ("does it
// take", "is it possible") or a conjunction.
func objectIt(re *regexp.Regexp, text string) bool {
	for _, g := range re.FindAllStringSubmatch(text, -1) {
		switch g[1] {
		case "is", "was", "are", "were", "does", "did", "do", "will", "would", "can", "could", "should",
			"shall", "may", "might", "must", "has", "have", "had", "if", "when", "because", "and", "but",
			"so", "as", "than", "whether", "what", "how", "why", "where", "that", "which", "until", "unless", "while":
			continue
		}
		return true
	}
	return false
}

// commands reports whether verb occurs in text as a command rather than
// after "to" ("make it shorter", not "to make it appealing"), and, when
// object is set, directly followed by a match of object.
func commands(verb *regexp.Regexp, text string, object *regexp.Regexp) bool {
	for _, loc := range verb.FindAllStringIndex(text, -1) {
		before := strings.Fields(text[:loc[0]])
		if len(before) > 0 && before[len(before)-1] == "to" {
			continue
		}
		if object == nil || object.MatchString(strings.TrimSpace(text[loc[1]:])) {
			return true
		}
	}
	return false
}

func score(cs []cue, text string) (int, []string) {
	n := 0
	var names []string
	for _, c := range cs {
		if matches(c, text) {
			n += c.weight
			names = append(names, c.name)
		}
	}
	return n, names
}

// matches reports whether c matches text, leaving out matches of a command
// cue that follow "to make it" or the like.
func matches(c cue, text string) bool {
	if !c.command {
		return c.re.MatchString(text)
	}
	for _, loc := range c.re.FindAllStringIndex(text, -1) {
		before := strings.Fields(text[:loc[0]])
		// "to make it", "to get them", "to keep": a purpose clause.
		if n := len(before); n >= 2 && (before[n-2] == "to" || (n >= 3 && before[n-3] == "to")) &&
			slices.Contains([]string{"make", "get", "keep", "it", "them", "this", "that"}, before[n-1]) {
			continue
		}
		return true
	}
	return false
}

func conf(base float64, n int) float64 {
	return min(0.9, base+0.05*float64(n))
}
