package compint

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
)

// Location is where in the context an SC is injected.
type Location string

// The injection conditions. With n user turns in the stitched context
// (numbered 1…n):
const (
	Top    Location = "top"    // turn 1
	Middle Location = "middle" // turn ⌊n/2⌋+1, the reference implementation's median
	Bottom Location = "bottom" // turn n, the last one before the probe
	Multi  Location = "multi"  // k = min(Repeat, n) distinct turns drawn at random (seeded)
	// None marks an instance without the SC, the long-context baseline.
	None Location = "none"
)

// Locations lists the four injection conditions in a fixed order.
func Locations() []Location { return []Location{Top, Middle, Bottom, Multi} }

// PaperLocation is the injection condition of the paper's main experiments.
const PaperLocation = Top

// DefaultRepeat is the restatement count for Multi when Options.Repeat is 0.
const DefaultRepeat = 3

func validLocation(l Location) bool {
	switch l {
	case Top, Middle, Bottom, Multi:
		return true
	}
	return false
}

// Options choose which instances the Builder makes from each context.
type Options struct {
	// Locations and Framings are crossed; empty means the paper's main
	// setting, [Top] and [Explicit].
	Locations []Location
	Framings  []Framing
	// Repeat is r, how many turns Multi restates the SC in (at most the
	// number of user turns); 0 means DefaultRepeat. It must be >= 2.
	Repeat int
	// Seed drives the Multi draws. The draw for a context and an SC does not
	// depend on the framing, so framings compare on the same turns.
	Seed uint64
}

func (o Options) withDefaults() (Options, error) {
	if len(o.Locations) == 0 {
		o.Locations = []Location{PaperLocation}
	}
	if len(o.Framings) == 0 {
		o.Framings = []Framing{PaperFraming}
	}
	if o.Repeat == 0 {
		o.Repeat = DefaultRepeat
	}
	for _, l := range o.Locations {
		if !validLocation(l) {
			return o, fmt.Errorf("building CompInt instances: unknown location %q (want top, middle, bottom or multi)", l)
		}
	}
	for _, f := range o.Framings {
		if !validFraming(f) {
			return o, fmt.Errorf("building CompInt instances: unknown framing %q (want plain, explicit, hard or explicit_hard)", f)
		}
	}
	if slices.Contains(o.Locations, Multi) && o.Repeat < 2 {
		return o, fmt.Errorf("building CompInt instances: repeat must be at least 2 for multi, got %d", o.Repeat)
	}
	if dup := firstDup(o.Locations); dup != "" {
		return o, fmt.Errorf("building CompInt instances: location %q listed twice", dup)
	}
	if dup := firstDup(o.Framings); dup != "" {
		return o, fmt.Errorf("building CompInt instances: framing %q listed twice", dup)
	}
	return o, nil
}

func firstDup[T ~string](xs []T) T {
	for i, x := range xs {
		if slices.Contains(xs[:i], x) {
			return x
		}
	}
	return ""
}

// Kind says whether an instance carries the SC.
type Kind string

// The two kinds of instance.
const (
	WithSC    Kind = "sc"   // the SC is injected: long context with SC, and what strategies compact
	WithoutSC Kind = "nosc" // the same context and probe without the SC: the baseline
)

// MetaKey is the key under which an instance's Meta sits in the JSON object
// of conv.Conversation.Meta.
const MetaKey = "compint"

// Format is the conv.Conversation.Format of every instance.
const Format = "compint"

// Meta is the injection metadata of an instance. It is stored as
// {"compint": Meta} in the instance's conv.Conversation.Meta, so the run
// keeps it with the conversation and exports carry it; ReadMeta gets it
// back.
type Meta struct {
	Version int         `json:"version"` // of this record's shape
	Kind    Kind        `json:"kind"`
	BaseID  string      `json:"base_id"` // the stitched context, shared by all its instances
	Sources []SourceRef `json:"sources"`

	SCID   int    `json:"sc_id"`
	SCType string `json:"sc_type"`
	SC     string `json:"sc"`      // the constraint as written, without framing
	SCHash string `json:"sc_hash"` // SC.Hash of the SC used

	// Location, Framing and Injected (the framed text put into user turns)
	// are empty for WithoutSC instances.
	Location Location `json:"location"`
	Framing  Framing  `json:"framing,omitempty"`
	Injected string   `json:"injected,omitempty"`
	// Repeat and Seed are set for Multi only.
	Repeat int    `json:"repeat,omitempty"`
	Seed   uint64 `json:"seed,omitempty"`
	// InjectedTurns are the user turns (1-based) that carry the SC.
	InjectedTurns []int `json:"injected_turns,omitempty"`

	// ProbeTurn is the user turn holding the probe: the last message.
	ProbeTurn int    `json:"probe_turn"`
	Probe     string `json:"probe"`
	Correct   string `json:"correct_answer"`
	Incorrect string `json:"incorrect_answer"`

	TargetTokens int `json:"target_tokens"`
	BaseTokens   int `json:"base_tokens"` // the stitched context without SC or probe
	// Tokens is the context with the SC injected, without the probe turn.
	Tokens int `json:"tokens"`

	// BaselineID is, for a WithSC instance, the id of its WithoutSC twin
	// (same context, same SC's probe).
	BaselineID string `json:"baseline_id,omitempty"`
}

// MetaVersion is the current version of Meta's shape.
const MetaVersion = 1

// ReadMeta returns the CompInt metadata of c. It reports false when c is not
// a CompInt instance, and an error when the metadata is there but malformed.
func ReadMeta(c *conv.Conversation) (Meta, bool, error) {
	if len(c.Meta) == 0 {
		return Meta{}, false, nil
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(c.Meta, &outer); err != nil {
		return Meta{}, false, nil // not an object: not ours
	}
	raw, ok := outer[MetaKey]
	if !ok {
		return Meta{}, false, nil
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Meta{}, true, fmt.Errorf("reading CompInt metadata of %s: %w", c.ID, err)
	}
	if m.Version != MetaVersion {
		return m, true, fmt.Errorf("reading CompInt metadata of %s: version %d, want %d", c.ID, m.Version, MetaVersion)
	}
	return m, true, nil
}

// Instance is one CompInt instance: a conversation whose last message is the
// probe, ready to be stored like any ingested conversation, and its
// metadata (also inside Conv.Meta).
type Instance struct {
	Conv *conv.Conversation
	Meta Meta
}

// Builder turns stitched contexts into instances. It is safe for
// concurrent use.
type Builder struct {
	tok *tokens.Counter
	set *Set
	opt Options
}

// NewBuilder returns a Builder for the SCs of set.
func NewBuilder(tok *tokens.Counter, set *Set, opt Options) (*Builder, error) {
	if tok == nil {
		return nil, fmt.Errorf("building CompInt instances: no token counter")
	}
	if set == nil || len(set.SCs) == 0 {
		return nil, fmt.Errorf("building CompInt instances: no SCs")
	}
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Builder{tok: tok, set: set, opt: opt}, nil
}

// Options returns the options in effect (defaults filled).
func (bd *Builder) Options() Options { return bd.opt }

// Set returns the SCs the builder injects.
func (bd *Builder) Set() *Set { return bd.set }

// PerContext is how many instances Expand makes from one context.
func (bd *Builder) PerContext() int {
	return len(bd.set.SCs) * (1 + len(bd.opt.Locations)*len(bd.opt.Framings))
}

// Expand makes every instance of b and hands each to emit, in a fixed order:
// for each SC in set order, its WithoutSC baseline, then each location (in
// Options order) under each framing. It stops at the first error from emit
// and returns it.
//
// Injection follows the CompInt reference implementation: the framed SC and
// a newline are put in front of the chosen user message. Putting it first
// keeps the SC at the start of the user's turn, ahead of whatever the turn
// pastes (code, documents), which is where a user typically states how the
// work should go; the paper's formula writes the same concatenation with
// the SC after the turn. The probe is then appended as a new user turn.
func (bd *Builder) Expand(b *Base, emit func(*Instance) error) error {
	if b == nil || len(b.users) == 0 {
		return fmt.Errorf("building CompInt instances: empty context")
	}
	for _, sc := range bd.set.SCs {
		base := bd.instance(b, sc, None, "", nil)
		if err := setMeta(base); err != nil {
			return err
		}
		if err := emit(base); err != nil {
			return err
		}
		for _, loc := range bd.opt.Locations {
			turns := bd.turnsFor(b, sc, loc)
			for _, f := range bd.opt.Framings {
				in := bd.instance(b, sc, loc, f, turns)
				in.Meta.BaselineID = base.Conv.ID
				if err := setMeta(in); err != nil {
					return err
				}
				if err := emit(in); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// turnsFor returns the 1-based user turns that get the SC at loc.
func (bd *Builder) turnsFor(b *Base, sc SC, loc Location) []int {
	n := len(b.users)
	switch loc {
	case Top:
		return []int{1}
	case Middle:
		return []int{n/2 + 1}
	case Bottom:
		return []int{n}
	}
	k := min(bd.opt.Repeat, n)
	return drawTurns(multiSeed(bd.opt.Seed, b.ID, sc), n, k)
}

// multiSeed derives the Multi draw's seed for one context and SC.
func multiSeed(seed uint64, baseID string, sc SC) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "compint multi v1\x00%d\x00%s\x00%d\x00%s", seed, baseID, sc.ID, sc.Hash())
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// drawTurns draws k distinct turns of 1…n uniformly (a partial
// Fisher–Yates shuffle) and returns them sorted. The generator is PCG and
// the bounded draw is written out here, so the result depends on the seed
// alone and not on the Go release's math/rand/v2 helpers.
func drawTurns(seed [32]byte, n, k int) []int {
	src := rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:16]))
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i + 1
	}
	for i := 0; i < k; i++ {
		j := i + int(bounded(src, uint64(n-i)))
		idx[i], idx[j] = idx[j], idx[i]
	}
	out := idx[:k:k]
	slices.Sort(out)
	return out
}

// bounded returns a uniform draw in [0, n) by Lemire's multiply-and-reject.
func bounded(src *rand.PCG, n uint64) uint64 {
	for {
		hi, lo := mul64(src.Uint64(), n)
		if lo >= n || lo >= -n%n {
			return hi
		}
	}
}

func mul64(x, y uint64) (hi, lo uint64) {
	const mask32 = 1<<32 - 1
	x0, x1 := x&mask32, x>>32
	y0, y1 := y&mask32, y>>32
	w0 := x0 * y0
	t := x1*y0 + w0>>32
	w1, w2 := t&mask32, t>>32
	w1 += x0 * y1
	return x1*y1 + w2 + w1>>32, x * y
}

// instance builds one instance; loc None makes the WithoutSC baseline.
func (bd *Builder) instance(b *Base, sc SC, loc Location, f Framing, turns []int) *Instance {
	msgs := make([]conv.Message, len(b.Messages), len(b.Messages)+1)
	copy(msgs, b.Messages)
	costs := slices.Clone(b.costs)
	m := Meta{
		Version: MetaVersion, Kind: WithoutSC, BaseID: b.ID, Sources: b.Sources,
		SCID: sc.ID, SCType: sc.Type, SC: sc.Text, SCHash: sc.Hash(), Location: None,
		ProbeTurn: len(b.users) + 1, Probe: sc.Probe, Correct: sc.Correct, Incorrect: sc.Incorrect,
		TargetTokens: b.TargetTokens, BaseTokens: b.Tokens,
	}
	if loc != None {
		m.Kind, m.Location, m.Framing, m.Injected = WithSC, loc, f, sc.Framing(f)
		m.InjectedTurns = turns
		if loc == Multi {
			m.Repeat, m.Seed = bd.opt.Repeat, bd.opt.Seed
		}
		for _, t := range turns {
			i := b.users[t-1]
			msgs[i].Content = Inject(m.Injected, msgs[i].Content)
			costs[i] = bd.tok.MessageCost(string(conv.User), bd.tok.Count(msgs[i].Content))
		}
	}
	n := b.sysCost
	for _, c := range costs {
		n += c
	}
	m.Tokens = tokens.Total(n)
	msgs = append(msgs, conv.Message{Role: conv.User, Content: sc.Probe})
	c := &conv.Conversation{
		ID:       instanceID(b.ID, sc, loc, f, m.Repeat, m.Seed),
		Source:   b.Sources[0].Source,
		Format:   Format,
		System:   b.System,
		Messages: msgs,
		Language: b.Language,
		Toxic:    b.Toxic,
		Redacted: b.Redacted,
	}
	return &Instance{Conv: c, Meta: m}
}

func setMeta(in *Instance) error {
	raw, err := json.Marshal(map[string]Meta{MetaKey: in.Meta})
	if err != nil {
		return fmt.Errorf("encoding CompInt metadata of %s: %w", in.Conv.ID, err)
	}
	in.Conv.Meta = raw
	return nil
}

// Inject returns a user message's content with the framed SC put in front
// of it on its own line.
func Inject(framed, content string) string {
	if content == "" {
		return framed
	}
	return framed + "\n" + content
}

// instanceID derives an instance's id from everything that determines its
// content: the context, the SC (by id and content hash), the location and
// framing, and for Multi the repeat count and seed. The seed is left out
// elsewhere on purpose: changing it must not re-key, and so re-pay for,
// instances whose text it does not change.
func instanceID(baseID string, sc SC, loc Location, f Framing, repeat int, seed uint64) string {
	h := sha256.New()
	fmt.Fprintf(h, "compint instance v1\x00%s\x00%d\x00%s\x00%s\x00%s", baseID, sc.ID, sc.Hash(), loc, f)
	if loc == Multi {
		fmt.Fprintf(h, "\x00%d\x00%d", repeat, seed)
	}
	return "ci-" + hex.EncodeToString(h.Sum(nil)[:10])
}

// Build reads conversations from convs in order, stitches them with st and
// expands every finished context with bd, handing each instance to emit. It
// stops when convs ends, when st has made MaxContexts contexts, at the first
// error from convs or emit (returned as is), or when ctx is cancelled
// (checked between conversations). It returns st's counts.
func Build(ctx context.Context, convs iter.Seq2[*conv.Conversation, error], st *Stitcher, bd *Builder, emit func(*Instance) error) (StitchStats, error) {
	for c, err := range convs {
		if err != nil {
			return st.Stats(), err
		}
		if err := ctx.Err(); err != nil {
			return st.Stats(), err
		}
		b := st.Add(c)
		if b == nil {
			continue
		}
		if err := bd.Expand(b, emit); err != nil {
			return st.Stats(), err
		}
		if st.Done() {
			break
		}
	}
	return st.Stats(), nil
}
