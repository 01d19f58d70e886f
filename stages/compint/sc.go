package compint

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Framing is the surface form an SC is injected in. The four framings cross
// two switches: whether the scope is named ("for the rest of this session")
// and whether the SC is marked as important.
type Framing string

// The framings of the CompInt suite.
const (
	Plain        Framing = "plain"         // the SC as written: contextualised, preferential
	Explicit     Framing = "explicit"      // scope named: direct, preferential (the paper's main setting)
	Hard         Framing = "hard"          // marked important: contextualised, strict
	ExplicitHard Framing = "explicit_hard" // both
)

// Framings lists every framing in a fixed order.
func Framings() []Framing { return []Framing{Plain, Explicit, Hard, ExplicitHard} }

// PaperFraming is the framing of the paper's main experiments: the scope is
// named and the SC is not marked as important ("direct" and "preferential").
const PaperFraming = Explicit

func validFraming(f Framing) bool {
	switch f {
	case Plain, Explicit, Hard, ExplicitHard:
		return true
	}
	return false
}

// The SC types of the CompInt taxonomy, in lower case like the types of
// stages/constraints, so a registry entry and an injected SC compare directly.
var scTypes = []string{"action", "information", "process", "preference", "output"}

// SC is one session constraint with its behavioural probe.
type SC struct {
	ID   int    // unique within its set, >= 1
	Type string // action, information, process, preference or output
	// Text is the constraint as written, without any framing.
	Text string
	// Probe is a later user request whose right handling depends on the SC.
	Probe string
	// Correct is the behaviour that honours the SC; Incorrect the one that
	// ignores it. They are the two options of the compliance question.
	Correct, Incorrect string
	// Framed holds the injected text for each framing.
	Framed map[Framing]string
}

// Framing returns the text injected under f.
func (s SC) Framing(f Framing) string { return s.Framed[f] }

// Hash is a short hash of everything about s that reaches a prompt or an
// instance, so an edited SC never shares ids or cache keys with the old one.
func (s SC) Hash() string {
	h := sha256.New()
	write := func(v string) { fmt.Fprintf(h, "%d:%s\x00", len(v), v) }
	write(fmt.Sprint(s.ID))
	write(s.Type)
	write(s.Text)
	write(s.Probe)
	write(s.Correct)
	write(s.Incorrect)
	for _, f := range Framings() {
		write(s.Framed[f])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Set is a validated list of SCs in file order.
type Set struct {
	Name string // where it came from: a path, or "embedded:sc_probes_15.json"
	SCs  []SC
	hash string
}

// Hash is a hash of the whole set (every SC's Hash in order), for config
// hashes and unit keys.
func (s *Set) Hash() string { return s.hash }

// Get returns the SC with the given id.
func (s *Set) Get(id int) (SC, bool) {
	for _, sc := range s.SCs {
		if sc.ID == id {
			return sc, true
		}
	}
	return SC{}, false
}

//go:embed data/sc_probes_15.json
var defaultSet []byte

// DefaultName names the shipped set in errors and in Set.Name.
const DefaultName = "embedded:sc_probes_15.json"

// Default returns the 15 SCs of the CompInt suite (three of each type), as
// shipped with ac3: a copy of fixtures/compint/sc_probes_15.json embedded in
// the binary.
func Default() *Set {
	s, err := Parse(DefaultName, defaultSet)
	if err != nil {
		panic(err) // the embedded file is checked by the tests
	}
	return s
}

// Load reads a set of SCs from a JSON file in the shape of the shipped one.
// See Parse.
func Load(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading SCs: %w", err)
	}
	return Parse(path, b)
}

// SCError reports a problem with one SC of a file, naming the file, the SC
// (by position and, when known, id) and the field.
type SCError struct {
	File   string
	Index  int // position in side_constraints, 0-based
	ID     int // 0 when the id itself is what is wrong
	Field  string
	Reason string
}

func (e *SCError) Error() string {
	who := fmt.Sprintf("side_constraints[%d]", e.Index)
	if e.ID != 0 {
		who += fmt.Sprintf(" (id %d)", e.ID)
	}
	if e.Field != "" {
		who += ": " + e.Field
	}
	return fmt.Sprintf("reading SCs from %s: %s: %s", e.File, who, e.Reason)
}

// wireSC is one SC as the file spells it.
type wireSC struct {
	ID        *int               `json:"id"`
	Type      string             `json:"type"`
	Text      string             `json:"sssc"`
	Probe     string             `json:"probe"`
	Correct   string             `json:"correct_answer"`
	Incorrect string             `json:"incorrect_answer"`
	Framings  map[string]*string `json:"framings"`
}

// Parse reads a set of SCs from JSON. name identifies the source in errors.
//
// The shape is the shipped file's: an object whose "side_constraints" holds
// the list (other top-level keys, such as "source" and "note", are ignored);
// a bare list is accepted too. Each SC has an integer "id" (>= 1, unique),
// a "type" (Action, Information, Process, Preference or Output, any case),
// "sssc" (the constraint), "probe", "correct_answer" and "incorrect_answer"
// (all non-empty; the two answers must differ) and "framings" with the four
// texts "plain", "explicit", "hard" and "explicit_hard". When "framings" is
// left out, all four are derived from "sssc" the way the suite derives them
// (see DeriveFramings); when it is given, all four must be there and no
// other. Unknown keys in an SC are an error, because a misspelt key would
// otherwise silently drop a field.
//
// Errors are *SCError values for problems with one SC, and plain errors for
// a file that is not JSON or holds no SCs.
func Parse(name string, data []byte) (*Set, error) {
	var raws []json.RawMessage
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, fmt.Errorf("reading SCs from %s: %w", name, err)
		}
	default:
		var top struct {
			SCs *[]json.RawMessage `json:"side_constraints"`
		}
		if err := json.Unmarshal(trimmed, &top); err != nil {
			return nil, fmt.Errorf("reading SCs from %s: %w", name, err)
		}
		if top.SCs == nil {
			return nil, fmt.Errorf("reading SCs from %s: no \"side_constraints\" list", name)
		}
		raws = *top.SCs
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("reading SCs from %s: the list of SCs is empty", name)
	}
	set := &Set{Name: name}
	seen := map[int]int{}
	h := sha256.New()
	for i, raw := range raws {
		sc, err := parseSC(raw)
		if err != nil {
			var se *SCError
			if errors.As(err, &se) {
				se.File, se.Index = name, i
				return nil, se
			}
			return nil, &SCError{File: name, Index: i, Reason: err.Error()}
		}
		if j, dup := seen[sc.ID]; dup {
			return nil, &SCError{File: name, Index: i, ID: sc.ID, Field: "id", Reason: fmt.Sprintf("also used by side_constraints[%d]", j)}
		}
		seen[sc.ID] = i
		set.SCs = append(set.SCs, sc)
		h.Write([]byte(sc.Hash()))
	}
	set.hash = hex.EncodeToString(h.Sum(nil)[:8])
	return set, nil
}

func parseSC(raw json.RawMessage) (SC, error) {
	var w wireSC
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return SC{}, fmt.Errorf("decoding: %w", err)
	}
	if w.ID == nil {
		return SC{}, &SCError{Field: "id", Reason: "missing"}
	}
	if *w.ID < 1 {
		return SC{}, &SCError{Field: "id", Reason: fmt.Sprintf("%d is not a positive integer", *w.ID)}
	}
	sc := SC{ID: *w.ID, Text: clean(w.Text), Probe: clean(w.Probe), Correct: clean(w.Correct), Incorrect: clean(w.Incorrect)}
	fail := func(field, reason string) (SC, error) {
		return SC{}, &SCError{ID: sc.ID, Field: field, Reason: reason}
	}
	typ := strings.ToLower(strings.TrimSpace(w.Type))
	known := false
	for _, t := range scTypes {
		known = known || typ == t
	}
	if !known {
		return fail("type", fmt.Sprintf("%q is not one of Action, Information, Process, Preference, Output", w.Type))
	}
	sc.Type = typ
	for _, f := range []struct{ name, v string }{
		{"sssc", sc.Text}, {"probe", sc.Probe}, {"correct_answer", sc.Correct}, {"incorrect_answer", sc.Incorrect},
	} {
		if f.v == "" {
			return fail(f.name, "missing or empty")
		}
	}
	if sc.Correct == sc.Incorrect {
		return fail("incorrect_answer", "the same as correct_answer, so the probe cannot tell them apart")
	}
	if w.Framings == nil {
		sc.Framed = DeriveFramings(sc.Text)
		return sc, nil
	}
	sc.Framed = map[Framing]string{}
	for k, v := range w.Framings {
		if !validFraming(Framing(k)) {
			return fail("framings."+k, "unknown framing (want plain, explicit, hard, explicit_hard)")
		}
		if v == nil || clean(*v) == "" {
			return fail("framings."+k, "missing or empty")
		}
		sc.Framed[Framing(k)] = clean(*v)
	}
	for _, f := range Framings() {
		if _, ok := sc.Framed[f]; !ok {
			return fail("framings."+string(f), "missing (give all four framings, or leave \"framings\" out to derive them)")
		}
	}
	return sc, nil
}

// clean trims s and rejects nothing: the caller checks for emptiness.
func clean(s string) string { return strings.TrimSpace(s) }

// DeriveFramings renders text under each framing the way the CompInt suite
// does: "explicit" opens with "For the rest of this session. ", "hard" with
// "This is an important constraint: ", "explicit_hard" with both (in that
// order, the second lower-cased), and the SC's first letter is lower-cased
// after a prefix. These short prefixes are the suite's defined stimuli, kept
// exactly so results compare with the paper's.
func DeriveFramings(text string) map[Framing]string {
	text = clean(text)
	return map[Framing]string{
		Plain:        text,
		Explicit:     "For the rest of this session. " + lowerFirst(text),
		Hard:         "This is an important constraint: " + lowerFirst(text),
		ExplicitHard: "This is an important constraint: for the rest of this session. " + lowerFirst(text),
	}
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}
