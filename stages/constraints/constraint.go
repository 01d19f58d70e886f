package constraints

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// StageName is the stage's name in unit keys, status and exports.
const StageName = "constraints"

// Types lists the constraint types in report order.
func Types() []string { return []string{"action", "information", "process", "preference", "output"} }

func validType(s string) bool {
	for _, t := range Types() {
		if s == t {
			return true
		}
	}
	return false
}

// Constraint is one session constraint.
type Constraint struct {
	Text     string `json:"text"`     // canonical one-sentence form
	Evidence string `json:"evidence"` // quoted from the user turn
	Type     string `json:"type"`     // action | information | process | preference | output
	Turn     int    `json:"turn"`     // the user turn that set it
}

// Record is the stored output of one constraints unit (user turn t).
type Record struct {
	New       []Constraint `json:"new"`      // set at this turn; usually empty
	Registry  []Constraint `json:"registry"` // every constraint active as of this turn
	Annotator string       `json:"annotator"`
}

// Encode returns the stored form of r (lists are [] rather than null).
func (r Record) Encode() ([]byte, error) {
	if r.New == nil {
		r.New = []Constraint{}
	}
	if r.Registry == nil {
		r.Registry = []Constraint{}
	}
	return json.Marshal(r)
}

// Decode reads a stored constraints unit output.
func Decode(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decoding constraints record: %w", err)
	}
	return r, nil
}

// UnitReader is the part of the ledger RegistryAsOf needs; *ledger.Ledger
// satisfies it.
type UnitReader interface {
	ConversationUnits(ctx context.Context, stage, convID string, turn int) ([]ledger.Unit, error)
}

// RegistryAsOf returns the registry of conversation convID as of user turn t
// as annotated by variant ("llm" or "heuristic"): the registry stored with
// the latest done unit at or before t. It reports false when no unit at or
// before t is done (not annotated yet, or every one failed).
func RegistryAsOf(ctx context.Context, r UnitReader, convID, variant string, t int) ([]Constraint, bool, error) {
	units, err := r.ConversationUnits(ctx, StageName, convID, 0)
	if err != nil {
		return nil, false, fmt.Errorf("reading constraints of %s: %w", convID, err)
	}
	best := -1
	for i, u := range units {
		if u.Variant == variant && u.Status == "done" && u.Turn <= t && (best < 0 || u.Turn > units[best].Turn) {
			best = i
		}
	}
	if best < 0 {
		return nil, false, nil
	}
	rec, err := Decode(units[best].Output)
	if err != nil {
		return nil, false, err
	}
	return rec.Registry, true, nil
}

// Render writes a registry as the plain text curation appends to a context:
// one numbered line per constraint. It returns "" for an empty registry.
func Render(reg []Constraint) string {
	if len(reg) == 0 {
		return ""
	}
	var b strings.Builder
	for i, c := range reg {
		fmt.Fprintf(&b, "%d. %s\n", i+1, c.Text)
	}
	return b.String()
}

// Input is everything the extractor may see for one user turn. It is built
// by NewInput from a user-only view and one assistant message, so no other
// assistant text can be in it.
type Input struct {
	turn          int
	user          string
	prevAssistant string
	registry      []Constraint
	earlier       []string // u_1 … u_{t-1}, for the parallel form only
}

// NewInput returns the input for the last turn of view: u_t from the view,
// prevAssistant (a_{t-1}, or "" at turn 1 or when u_{t-1} got no reply), a
// copy of the registry so far and the earlier user turns of the view.
func NewInput(view conv.UserView, prevAssistant string, registry []Constraint) Input {
	t := view.Len()
	in := Input{turn: t, prevAssistant: prevAssistant, registry: append([]Constraint(nil), registry...)}
	if t > 0 {
		users := view.Users()
		in.user, in.earlier = users[t-1], users[:t-1]
	}
	return in
}

// InputAt builds the Input for user turn t of c from the registry so far:
// the user-only view U_t and a_{t-1} only.
func InputAt(c *conv.Conversation, t int, registry []Constraint) Input {
	return NewInput(conv.NewUserView(c, t), previousReply(c, t), registry)
}

// Turn returns t.
func (in Input) Turn() int { return in.turn }

// User returns u_t.
func (in Input) User() string { return in.user }

// PrevAssistant returns a_{t-1} ("" when there is none).
func (in Input) PrevAssistant() string { return in.prevAssistant }

// Registry returns a copy of the registry before turn t.
func (in Input) Registry() []Constraint { return append([]Constraint(nil), in.registry...) }

// Earlier returns a copy of u_1 … u_{t-1}. The parallel form shows them in
// place of the registry, which it cannot have (see Proposer).
func (in Input) Earlier() []string { return append([]string(nil), in.earlier...) }

// previousReply returns the content of a_{t-1}: the first assistant message
// answering u_{t-1}, or "".
func previousReply(c *conv.Conversation, t int) string {
	if t < 2 {
		return ""
	}
	turns := c.Turns()
	if t-2 >= len(turns) {
		return ""
	}
	if r := turns[t-2].Reply; r >= 0 {
		return c.Messages[r].Content
	}
	return ""
}

// merge appends to reg the constraints of found that it does not already
// hold (by Duplicate), setting their turn to t, and returns the new ones and
// the new registry.
func merge(reg, found []Constraint, t int) (added, out []Constraint) {
	out = append([]Constraint(nil), reg...)
	added = []Constraint{}
	for _, c := range found {
		c.Turn = t
		added, out = addNew(added, out, c)
	}
	return added, out
}

// addNew appends c to added and to reg unless reg already holds a
// constraint that says the same (Duplicate).
func addNew(added, reg []Constraint, c Constraint) ([]Constraint, []Constraint) {
	if slices.ContainsFunc(reg, func(r Constraint) bool { return Duplicate(r.Text, c.Text) }) {
		return added, reg
	}
	return append(added, c), append(reg, c)
}

// Duplicate reports whether two canonical sentences say the same thing:
// equal after normalising case and punctuation, or sharing at least 80% of
// their words.
func Duplicate(a, b string) bool {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wb) == 0 {
		return len(wa) == len(wb)
	}
	if strings.Join(wa, " ") == strings.Join(wb, " ") {
		return true
	}
	return jaccard(wa, wb) >= 0.8
}

// jaccard is the share of distinct words two word lists have in common; 0
// when both are empty.
func jaccard(wa, wb []string) float64 {
	sa, sb := map[string]bool{}, map[string]bool{}
	for _, w := range wa {
		sa[w] = true
	}
	for _, w := range wb {
		sb[w] = true
	}
	inter := 0
	for w := range sb {
		if sa[w] {
			inter++
		}
	}
	union := len(sa) + len(sb) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

// quoted reports whether evidence is taken from text: a normalised substring,
// or (to forgive a fixed typo or dropped quote) 80% of its words in text.
func quoted(evidence, text string) bool {
	ev, tx := words(evidence), words(text)
	if len(ev) == 0 {
		return false
	}
	if strings.Contains(" "+strings.Join(tx, " ")+" ", " "+strings.Join(ev, " ")+" ") {
		return true
	}
	set := map[string]bool{}
	for _, w := range tx {
		set[w] = true
	}
	hit := 0
	for _, w := range ev {
		if set[w] {
			hit++
		}
	}
	return float64(hit)/float64(len(ev)) >= 0.8
}
