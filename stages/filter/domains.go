package filter

import (
	"slices"
	"strings"
	"sync"

	"github.com/ac3/ac3/pipeline/conv"
)

// The domain names, in the order Domains and Classify use.
const (
	CreativeWriting = "creative_writing"
	ScienceMedical  = "science_medical"
	BusinessFinance = "business_finance"
	Education       = "education"
	Math            = "math"
	Coding          = "coding"
)

type domain struct {
	name     string
	keywords []string
}

// domainKeywords are the keyword lists of Huang et al., "Do LLMs benefit from
// their own words?", appendix A.1 (Data Filtering): the same keywords, kept
// here in alphabetical order (matching is by set, so order does not matter).
// The paper does not say how it matched them; matching rules are ours (see
// doc.go).
var domainKeywords = []domain{
	{CreativeWriting, []string{
		"antagonist", "dystopian", "essay", "fairy tale", "hero", "historical fiction",
		"imagery", "lyric", "metaphor", "monologue", "mystery", "novel", "plot", "poem",
		"protagonist", "satire", "science fiction", "thriller", "villain",
	}},
	{ScienceMedical, []string{
		"anatomy", "bacteria", "biology", "cell", "chemistry", "clinical", "diagnosis",
		"disease", "DNA", "ecology", "epidemiology", "experiment", "hypothesis",
		"laboratory", "medical", "medicine", "microscope", "molecule", "neurology",
		"organism", "pathology", "patient", "pharmacology", "physics", "physiology",
		"protein", "scientific evidence", "species", "symptom", "treatment", "virus",
	}},
	{BusinessFinance, []string{
		"accounting", "budget", "business", "business model", "business plan", "economics",
		"entrepreneur", "finance", "financial", "fiscal", "GDP", "inflation",
		"interest rate", "investment", "market research", "marketing", "monetary",
		"portfolio", "pricing", "profit", "revenue", "startup", "stock", "strategy",
		"supply chain", "trading", "venture capital",
	}},
	{Education, []string{
		"academic", "assignment", "classroom", "course", "curriculum", "education", "exam",
		"explain to me", "grade", "homework", "learning", "lecture", "lesson", "professor",
		"quiz", "school", "semester", "student", "study", "study guide", "teach me",
		"test preparation", "tutor", "tutorial", "university",
	}},
	{Math, []string{
		"algebra", "calculate", "calculus", "corollary", "derivative", "differential",
		"equation", "formula", "function", "geometry", "graph theory", "lemma",
		"linear algebra", "mathematical", "mathematics", "matrix", "optimization",
		"polynomial", "probability", "proof", "statistics", "theorem", "trigonometry",
	}},
	{Coding, []string{
		"algorithm", "API", "array", "bug", "c++", "class", "code", "coding", "compile",
		"data structure", "debug", "developer", "error", "framework", "implementation",
		"java", "javascript", "library", "loop", "method", "program", "programming",
		"python", "recursion", "runtime", "script", "software", "variable",
	}},
}

// Domains returns the names of the keyword domains, in a fixed order.
func Domains() []string {
	out := make([]string, len(domainKeywords))
	for i, d := range domainKeywords {
		out[i] = d.name
	}
	return out
}

// Keywords returns a copy of the keyword list of a domain as published, or
// nil for an unknown name. It is there so the CLI can show what a domain means.
func Keywords(domain string) []string {
	if i := domainIndex(domain); i >= 0 {
		return slices.Clone(domainKeywords[i].keywords)
	}
	return nil
}

// domainIndex finds a domain by name, ignoring case, or returns -1.
func domainIndex(name string) int {
	for i, d := range domainKeywords {
		if strings.EqualFold(d.name, name) {
			return i
		}
	}
	return -1
}

// Classify returns the domains whose keywords occur in c's user messages, in
// Domains order; nil when none do. It scans all user text (Check stops at the
// first wanted match), so use it for metadata, not as a cheap filter.
func Classify(c *conv.Conversation) []string {
	mask := scanUser(c, 0) // want nothing: never stop early
	if mask == 0 {
		return nil
	}
	var out []string
	for i, d := range domainKeywords {
		if mask&(1<<i) != 0 {
			out = append(out, d.name)
		}
	}
	return out
}

// scanUser returns the domain bits found in c's user messages, stopping as
// soon as any bit of want is found (never, when want is 0). Only user messages are read: they state
// the topic, while assistant text is longer and full of words like "code",
// "function" or "example" whatever the topic is.
func scanUser(c *conv.Conversation, want uint8) uint8 {
	m := matcher()
	var found uint8
	for i := range c.Messages {
		if c.Messages[i].Role != conv.User {
			continue
		}
		found |= m.scan(c.Messages[i].Content, want)
		if found&want != 0 {
			break
		}
	}
	return found
}

// The matcher is an Aho–Corasick automaton compiled into a dense table, so a
// scan costs two table loads per byte whatever the number of keywords.
//
// Bytes are first mapped to symbol classes: ASCII letters (case folded) and
// '+' that occur in some keyword get a class each, other word bytes (the rest
// of [A-Za-z0-9_]) share one class, and everything else, including every byte
// of a non-ASCII character, is the boundary class. A keyword is compiled as
// boundary, its letters, boundary, with each space inside a phrase also a
// boundary, so a match needs word boundaries on both sides and no separate
// check. A run of boundary bytes reads as one (the table loops on it), so
// "fairy  tale" and "fairy-tale" match "fairy tale". A keyword that ends in a
// non-letter ("c++") has no trailing boundary, so "C++17" still matches.
type acMatcher struct {
	class [256]uint8 // byte -> symbol class
	// delta[s|class] is the next state, where a state is the offset of its
	// row. States are numbered so that those with output come last, from
	// firstOut on, which keeps the hot loop to one compare.
	delta    []uint32
	out      []uint8 // domain bits per state, indexed by (s-firstOut)>>symBits
	firstOut uint32
	start    uint32 // the state after the virtual boundary that opens a text
}

const (
	symBoundary = 0
	symWord     = 1 // a word byte that occurs in no keyword
	// symBits fixes the row width at 32 symbols: a constant shift is cheaper,
	// and the keywords need at most 27 (letters and '+') besides the two above.
	symBits = 5
)

var matcher = sync.OnceValue(func() *acMatcher { return compile(domainKeywords) })

// scan returns the domain bits matched in text, stopping early once a bit of
// want is found.
func (m *acMatcher) scan(text string, want uint8) uint8 {
	var found uint8
	// States are kept as row offsets (state<<symBits), saving a shift per byte.
	s, delta, class, first := m.start, m.delta, &m.class, m.firstOut
	for i := range len(text) {
		s = delta[s|uint32(class[text[i]])]
		if s >= first {
			found |= m.out[(s-first)>>symBits]
			if found&want != 0 {
				return found
			}
		}
	}
	// The text ends with a virtual boundary.
	if s = delta[s|symBoundary]; s >= first {
		found |= m.out[(s-first)>>symBits]
	}
	return found
}

// variants returns the spellings of a keyword we accept: as written, plus
// "s", plus "es", plus "ies" for a final consonant-y ("study" -> "studies").
// Only the last word of a phrase is inflected ("fairy tales"). Other forms
// ("debugging", "coded") do not match: the lists are matched as published.
func variants(kw string) []string {
	kw = strings.ToLower(kw)
	last := kw[len(kw)-1]
	if !isLetter(last) {
		return []string{kw}
	}
	out := []string{kw, kw + "s", kw + "es"}
	if n := len(kw); last == 'y' && n > 1 && !strings.ContainsRune("aeiou", rune(kw[n-2])) {
		out = append(out, kw[:n-1]+"ies")
	}
	return out
}

func isLetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

func isWordByte(b byte) bool {
	return isLetter(b) || '0' <= b && b <= '9' || b == '_' || b == '+'
}

// compile builds the automaton for the given domains (bit i for domain i).
func compile(domains []domain) *acMatcher {
	m := &acMatcher{}

	// Symbol classes.
	nsym := 2
	for b := range 256 {
		if isWordByte(byte(b)) {
			m.class[b] = symWord
		}
	}
	for _, d := range domains {
		for _, kw := range d.keywords {
			for _, b := range []byte(strings.ToLower(kw)) {
				if b == ' ' || m.class[b] != symWord {
					continue
				}
				m.class[b] = uint8(nsym)
				if isLetter(b) {
					m.class[b-'a'+'A'] = uint8(nsym)
				}
				nsym++
			}
		}
	}
	if nsym > 1<<symBits {
		panic("filter: keywords use more than 32 symbol classes")
	}
	const width = 1 << symBits

	// Trie of boundary-framed patterns. State 0 is the root; -1 is no edge.
	type node struct {
		next  []int32
		fail  int32
		out   uint8
		bound bool // entered on the boundary symbol
	}
	newNode := func() node {
		n := node{next: make([]int32, width)}
		for i := range n.next {
			n.next[i] = -1
		}
		return n
	}
	nodes := []node{newNode()}
	add := func(syms []uint8, bit uint8) {
		s := int32(0)
		for _, c := range syms {
			if nodes[s].next[c] < 0 {
				nodes[s].next[c] = int32(len(nodes))
				n := newNode()
				n.bound = c == symBoundary
				nodes = append(nodes, n)
			}
			s = nodes[s].next[c]
		}
		nodes[s].out |= bit
	}
	for i, d := range domains {
		for _, kw := range d.keywords {
			for _, v := range variants(kw) {
				syms := []uint8{symBoundary}
				for _, b := range []byte(v) {
					syms = append(syms, m.class[b])
				}
				if isLetter(v[len(v)-1]) {
					syms = append(syms, symBoundary)
				}
				add(syms, 1<<i)
			}
		}
	}

	// Breadth-first: fail links, inherited output, and missing edges filled
	// from the fail state, which turns the trie into a DFA.
	queue := []int32{}
	for c := range width {
		if t := nodes[0].next[c]; t < 0 {
			nodes[0].next[c] = 0
		} else {
			nodes[t].fail = 0
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		nodes[s].out |= nodes[nodes[s].fail].out
		for c := range width {
			t := nodes[s].next[c]
			if t < 0 {
				nodes[s].next[c] = nodes[nodes[s].fail].next[c]
				continue
			}
			nodes[t].fail = nodes[nodes[s].fail].next[c]
			queue = append(queue, t)
		}
	}
	// A second boundary adds nothing: stay put, so runs of boundaries act as one.
	for s := range nodes {
		if nodes[s].bound {
			nodes[s].next[symBoundary] = int32(s)
		}
	}

	// Renumber: states without output first, then those with output.
	perm := make([]uint32, len(nodes))
	var n uint32
	for pass := range 2 {
		for s := range nodes {
			if (nodes[s].out != 0) == (pass == 1) {
				perm[s] = n
				n++
			}
		}
		if pass == 0 {
			m.firstOut = n << symBits
		}
	}
	m.delta = make([]uint32, len(nodes)*width)
	m.out = make([]uint8, len(nodes)-int(m.firstOut>>symBits))
	for s, nd := range nodes {
		p := perm[s] << symBits
		for c := range width {
			m.delta[p|uint32(c)] = perm[nd.next[c]] << symBits
		}
		if p >= m.firstOut {
			m.out[(p-m.firstOut)>>symBits] = nd.out
		}
	}
	m.start = perm[nodes[0].next[symBoundary]] << symBits
	return m
}
