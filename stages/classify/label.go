package classify

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// StageName is the stage's name in unit keys, status and exports.
const StageName = "classify"

// The turn types.
const (
	NewAsk     = "new_ask"
	Feedback   = "feedback"
	NoFeedback = "no_feedback"
)

// Unknown is what the heuristic annotator stores when its rules do not
// clearly apply (a message in another language, or cues that point both
// ways). It is not a turn type: gold labels and the LLM annotator never use
// it, scores count it as an abstention, and a consumer that needs a type
// must treat it as "not known" (adaptive keeps full context there).
const Unknown = "unknown"

// Types lists the turn types in report order. Unknown is not among them.
func Types() []string { return []string{NewAsk, Feedback, NoFeedback} }

// Label is the stored output of one classify unit (one user turn t >= 2).
type Label struct {
	Type       string   `json:"type"`
	Confidence float64  `json:"confidence"`
	Reason     string   `json:"reason"`
	Refs       []string `json:"refs"` // [] when self-contained, never null
	Annotator  string   `json:"annotator"`
}

// Encode returns the stored form of l.
func (l Label) Encode() ([]byte, error) {
	if l.Refs == nil {
		l.Refs = []string{}
	}
	return json.Marshal(l)
}

// Decode reads a stored classify unit output.
func Decode(b []byte) (Label, error) {
	var l Label
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("decoding classify label: %w", err)
	}
	if !validType(l.Type) && l.Type != Unknown {
		return l, fmt.Errorf("decoding classify label: unknown type %q", l.Type)
	}
	return l, nil
}

// validType reports whether s is one of the three turn types (Unknown is
// not one).
func validType(s string) bool { return s == NewAsk || s == Feedback || s == NoFeedback }

// ParseRef splits a reference such as "3u" into its distance and side
// ('u' or 'a'). It reports false for anything else.
func ParseRef(s string) (dist int, side byte, ok bool) {
	if len(s) < 2 {
		return 0, 0, false
	}
	side = s[len(s)-1]
	if side != 'u' && side != 'a' {
		return 0, 0, false
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n < 1 || strings.HasPrefix(s, "+") {
		return 0, 0, false
	}
	return n, side, true
}

// checkRefs normalises refs for turn t: lower-cases, drops duplicates, and
// rejects references that do not exist (further back than turn 1).
func checkRefs(refs []string, t int) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	for _, r := range refs {
		r = strings.ToLower(strings.TrimSpace(r))
		if r == "0" || r == "" {
			continue // "0" is how some annotators say self-contained
		}
		d, _, ok := ParseRef(r)
		if !ok {
			return nil, fmt.Errorf("reference %q: want a distance and u or a, e.g. 1a", r)
		}
		if d > t-1 {
			return nil, fmt.Errorf("reference %q: turn %d has only %d earlier rounds", r, t, t-1)
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}
