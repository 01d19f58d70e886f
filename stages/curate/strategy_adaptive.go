package curate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/tokens"
	"github.com/ac3/ac3/stages/curate/curated"
	"github.com/ac3/ac3/stages/curate/policy"
)

// ClassifyStage is the stage whose units carry turn types.
const ClassifyStage = "classify"

// Adaptive policies.
const (
	// PolicyOmitOnNewAsk uses ao on turns the classify stage labelled
	// new_ask and fc on every other turn.
	PolicyOmitOnNewAsk = "omit-on-new-ask"
	// PolicyScored keeps fc iff P(fc wins) − λ·Δ ≥ τ, with P from a policy
	// fitted by 'ac3 policy fit' and Δ the assistant-history tokens over
	// their mean in the fitting data.
	PolicyScored = "scored"
)

// AdaptiveOptions configure adaptive. The zero value is PolicyOmitOnNewAsk.
type AdaptiveOptions struct {
	Policy string
	// Lambda and Tau are λ and τ of PolicyScored (defaults 0 and 0.5: keep
	// fc when it is predicted to win at least half the time, with no cost
	// pressure; raise Lambda to trade quality for tokens).
	Lambda, Tau float64
	// Fitted is the model 'ac3 policy fit' stored; PolicyScored needs it.
	Fitted *policy.Policy
	// Embed embeds the texts a policy on the paper's features scores
	// (nil: no embedder bound), cut where the fit cut them; Embedder names
	// its model as the policy records it.
	Embed    policy.Embedder `json:"-"`
	Embedder string          `json:"-"`
}

// historyPairs is how many messages of the history EmbedTexts keeps when
// there are more: the first user–assistant pair and the latest (A.15).
const historyPairs = 4

// EmbedTexts are the two texts of turn t of c that the paper's policy
// features embed (Huang et al., A.15): the turn's user message, and the
// user and assistant messages before it as "role: content" paragraphs;
// when there are more than four, only the first pair and the latest pair.
// Each is cut to maxTokens tokens (0: not cut). A first turn's history is
// a fixed line, since servers refuse empty inputs.
func EmbedTexts(c *conv.Conversation, t int, counter *tokens.Counter, maxTokens int) (prompt, history string, err error) {
	user := -1
	for _, tr := range c.Turns() {
		if tr.Index == t {
			user = tr.User
		}
	}
	if user < 0 {
		return "", "", fmt.Errorf("turn %d of %s: no such turn", t, c.ID)
	}
	var hist []conv.Message
	for _, m := range c.Messages[:user] {
		if m.Role == conv.User || isAssistantSide(m.Role) {
			hist = append(hist, m)
		}
	}
	if len(hist) > historyPairs {
		hist = append(hist[:2:2], hist[len(hist)-2:]...)
	}
	var b strings.Builder
	for _, m := range hist {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(string(m.Role) + ": " + m.Content)
	}
	history = b.String()
	if strings.TrimSpace(history) == "" {
		history = "(no earlier messages)"
	}
	prompt = c.Messages[user].Content
	if strings.TrimSpace(prompt) == "" {
		prompt = "(empty message)"
	}
	return counter.Head(prompt, maxTokens), counter.Head(history, maxTokens), nil
}

// classifyUnit is the part of a classify unit adaptive reads.
type classifyUnit struct {
	Type string   `json:"type"`
	Refs []string `json:"refs"`
}

var errAdaptiveInputs = errors.New("adaptive needs its inputs")

// Adaptive chooses, per turn, between fc and ao.
type Adaptive struct {
	opts     AdaptiveOptions
	embedMax int // where EmbedTexts cuts, for a policy on the paper's features
	units    UnitSource
	up       Upstream
	ao       AssistantOmission
	version  string
}

func newAdaptive(o Options) (*Adaptive, error) {
	a := o.Adaptive
	if a.Policy == "" {
		a.Policy = PolicyOmitOnNewAsk
	}
	if a.Tau == 0 && a.Policy == PolicyScored {
		a.Tau = 0.5
	}
	s := &Adaptive{opts: a, units: o.Units, up: o.Classify, ao: NewAssistantOmission(o)}
	switch a.Policy {
	case PolicyOmitOnNewAsk:
		if o.Units == nil {
			return nil, errAdaptiveInputs
		}
		s.version = fmt.Sprintf("1;%s;classify=%s;ao=%s", a.Policy, o.Classify, s.ao.Version())
	case PolicyScored:
		if a.Fitted == nil {
			return nil, fmt.Errorf("building strategy adaptive: policy %s needs a fitted policy: run 'ac3 policy fit' after judging fc against ao", PolicyScored)
		}
		s.version = fmt.Sprintf("1;%s;lambda=%g;tau=%g;policy=%s;classify=%s;ao=%s", a.Policy, a.Lambda, a.Tau, a.Fitted.Hash(), o.Classify, s.ao.Version())
		if a.Fitted.Paper() {
			if a.Embed == nil {
				return nil, fmt.Errorf("building strategy adaptive: the fitted policy scores the paper's features, whose embeddings need the embedder role (%s when fitted)", a.Fitted.Embedder)
			}
			if a.Fitted.Embedder != "" && a.Embedder != "" && a.Fitted.Embedder != a.Embedder {
				return nil, fmt.Errorf("building strategy adaptive: the policy was fitted on embeddings of %s, the embedder role is now %s: bind the same model, or run 'ac3 policy fit' again", a.Fitted.Embedder, a.Embedder)
			}
			s.embedMax = cmp.Or(a.Fitted.EmbedMaxTokens, policy.DefaultEmbedMaxTokens)
		}
	default:
		return nil, fmt.Errorf("building strategy adaptive: unknown policy %q (valid: %s, %s)", a.Policy, PolicyOmitOnNewAsk, PolicyScored)
	}
	return s, nil
}

// Name returns "adaptive".
func (*Adaptive) Name() string { return "adaptive" }

// Version includes the policy, its parameters and fitted model's hash, and
// the classify variant read.
func (s *Adaptive) Version() string { return s.version }

// Contexts builds fc and ao for each turn t >= from and keeps one.
func (s *Adaptive) Contexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	fcs, err := FullContext{}.Contexts(ctx, c, from, ws)
	if err != nil {
		return nil, err
	}
	aos, err := s.ao.Contexts(ctx, c, from, ws)
	if err != nil {
		return nil, err
	}
	var types map[int]classifyUnit
	var us upstreamUnits
	undecoded := map[int]error{}
	if s.units != nil {
		var err error
		if us, err = unitsByTurn(ctx, s.units, ClassifyStage, c.ID, s.up); err != nil {
			return nil, err
		}
		types = map[int]classifyUnit{}
		for t, u := range us.done {
			var cu classifyUnit
			if err := decodeJSON(u.Output, &cu); err != nil {
				undecoded[t] = fmt.Errorf("decoding %s unit %s: %w", ClassifyStage, u.Key, err)
				continue
			}
			types[t] = cu
		}
	}
	sel, all := selectTurns(c, from)
	vecs, err := s.embeddings(ctx, c, sel, ws)
	if err != nil {
		if errors.Is(err, llm.ErrDeferred) || len(sel) == 0 {
			return nil, err
		}
		return nil, &TurnError{Turn: sel[0].Index, Err: err}
	}
	var sizes historySizes
	out := make([]curated.Context, 0, len(fcs))
	for k, tr := range sel {
		sizes.upTo(c, ws, tr.User)
		cu, known := types[tr.Index]
		info := curated.Info{Operator: "adaptive", TurnType: cu.Type}
		useAO := false
		switch s.opts.Policy {
		case PolicyOmitOnNewAsk:
			if !known && tr.Index >= 2 {
				err := undecoded[tr.Index]
				switch {
				case err != nil:
				case s.units == nil:
					err = fmt.Errorf("no %s unit (variant %s) for this turn: run the classify stage first", ClassifyStage, s.up.variant())
				default:
					err = us.missing(tr.Index)
				}
				return out, &TurnError{Turn: tr.Index, Err: err}
			}
			useAO = cu.Type == "new_ask"
		case PolicyScored:
			f := policy.TurnFeatures{Turn: tr.Index, FCTokens: fcs[k].Tokens, AOTokens: aos[k].Tokens, TurnType: cu.Type, Rounds: len(all)}
			sizes.set(&f)
			f.RefsAny, f.RefsAssistant = refsFlags(cu.Refs)
			if vecs != nil {
				f.Prompt, f.History = vecs[2*k], vecs[2*k+1]
			}
			// A conversation the policy was fitted on is scored out of
			// sample, by the fold fit that held it out.
			score, err := s.opts.Fitted.For(c.ID).Score(f, s.opts.Lambda)
			if err != nil {
				return out, &TurnError{Turn: tr.Index, Err: fmt.Errorf("scoring the adaptive policy: %w", err)}
			}
			info.Scored, info.Score = true, score
			useAO = score < s.opts.Tau
		}
		x := fcs[k]
		info.Action = "fc"
		if useAO {
			x = aos[k]
			info.Action, info.GateOpen = "ao", true
		}
		x.Strategy, x.Info = "adaptive", info
		out = append(out, x)
	}
	return out, nil
}

// embeddings are the prompt and history embeddings of the selected turns
// (EmbedTexts), two per turn in turn order, asked in one Embed call so a
// batch round serves the conversation; nil when the policy needs none.
func (s *Adaptive) embeddings(ctx context.Context, c *conv.Conversation, sel []conv.Turn, ws *Workspace) ([][]float32, error) {
	if s.opts.Policy != PolicyScored || !s.opts.Fitted.Paper() || len(sel) == 0 {
		return nil, nil
	}
	texts, err := s.embedTexts(c, sel, ws)
	if err != nil {
		return nil, err
	}
	vs, err := s.opts.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embedding the prompts and histories of %d turns: %w", len(sel), err)
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("embedding: %d vectors for %d texts", len(vs), len(texts))
	}
	return vs, nil
}

// embedTexts are the texts embeddings embeds.
func (s *Adaptive) embedTexts(c *conv.Conversation, sel []conv.Turn, ws *Workspace) ([]string, error) {
	texts := make([]string, 0, 2*len(sel))
	for _, tr := range sel {
		p, h, err := EmbedTexts(c, tr.Index, ws.Counter(), s.embedMax)
		if err != nil {
			return nil, err
		}
		texts = append(texts, p, h)
	}
	return texts, nil
}

// historySizes are what the scored policy counts of a turn's context:
// the tokens and characters of the assistant-side messages before u_t and
// the characters of the user messages up to and with it. It is folded
// forward message by message, so a conversation's turns cost one pass.
type historySizes struct {
	next                             int // the first message not counted yet
	asstTokens, userChars, asstChars int
}

// upTo counts the messages up to user, u_t's index.
func (h *historySizes) upTo(c *conv.Conversation, ws *Workspace, user int) {
	for ; h.next <= user; h.next++ {
		m := c.Messages[h.next]
		switch {
		case m.Role == conv.User:
			h.userChars += utf8.RuneCountInString(m.Content)
		case isAssistantSide(m.Role) && h.next < user:
			h.asstTokens += messageCost(c, ws, h.next)
			h.asstChars += utf8.RuneCountInString(m.Content)
		}
	}
}

func (h *historySizes) set(f *policy.TurnFeatures) {
	f.AsstTokens, f.UserChars, f.AsstChars = h.asstTokens, h.userChars, h.asstChars
}

// refsFlags reads classify refs ("1a", "2u"; none means self-contained).
func refsFlags(refs []string) (anyRef, assistant bool) {
	for _, r := range refs {
		r = strings.TrimSpace(r)
		if r == "" || r == "0" {
			continue
		}
		anyRef = true
		if strings.HasSuffix(r, "a") {
			assistant = true
		}
	}
	return anyRef, assistant
}

func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// FeaturesOf computes the scored policy's features for turn t of c, as
// adaptive computes them while curating; classify is the turn's classify
// unit output (nil when unknown). With embedMax above 0 it also sets the
// texts the paper's features embed, each cut to embedMax tokens. 'ac3
// policy fit' uses it on judged turns.
func FeaturesOf(ctx context.Context, c *conv.Conversation, t int, ws *Workspace, classify []byte, embedMax int) (policy.TurnFeatures, error) {
	f := policy.TurnFeatures{Turn: t}
	fcs, err := FullContext{}.Contexts(ctx, c, t, ws)
	if err != nil || len(fcs) == 0 {
		return f, fmt.Errorf("computing features of turn %d of %s: no such turn", t, c.ID)
	}
	aos, err := NewAssistantOmission(Options{}).Contexts(ctx, c, t, ws)
	if err != nil || len(aos) == 0 {
		return f, fmt.Errorf("computing features of turn %d of %s: no such turn", t, c.ID)
	}
	f.FCTokens, f.AOTokens = fcs[0].Tokens, aos[0].Tokens
	user := -1
	for _, tr := range c.Turns() {
		if tr.Index == t {
			user = tr.User
		}
	}
	f.Rounds = len(c.Turns())
	var sizes historySizes
	sizes.upTo(c, ws, user)
	sizes.set(&f)
	if embedMax > 0 {
		if f.PromptText, f.HistoryText, err = EmbedTexts(c, t, ws.Counter(), embedMax); err != nil {
			return f, err
		}
	}
	if classify != nil {
		var cu classifyUnit
		if err := json.Unmarshal(classify, &cu); err == nil {
			f.TurnType = cu.Type
			f.RefsAny, f.RefsAssistant = refsFlags(cu.Refs)
		}
	}
	return f, nil
}

// PolicyFeatures computes the scored policy's features of judged turns for
// policy.FitRun, as FeaturesOf does (with embedMax), with a workspace for
// the conversation at hand counting with counter. classify names the classify variant whose turn
// types and references become features (zero when the run has none: those
// features are then zero); its units are read from units.
func PolicyFeatures(units UnitSource, classify Upstream, counter *tokens.Counter, embedMax int) policy.FeatureFunc {
	// FitRun asks a conversation's turns together: only its workspace is
	// kept.
	var ws *Workspace
	var wsConv string
	return func(ctx context.Context, c *conv.Conversation, t int) (policy.TurnFeatures, bool, error) {
		if ws == nil || wsConv != c.ID {
			ws, wsConv = NewWorkspace(c, counter), c.ID
		}
		var cls []byte
		if classify.Variant != "" {
			us, err := units.ConversationUnits(ctx, ClassifyStage, c.ID, t)
			if err != nil {
				return policy.TurnFeatures{}, false, err
			}
			for _, u := range us {
				if u.Variant == classify.Variant && u.Version == classify.Version && u.Status == ledger.Done {
					cls = u.Output
				}
			}
		}
		f, err := FeaturesOf(ctx, c, t, ws, cls, embedMax)
		if err != nil {
			return f, false, nil
		}
		return f, true, nil
	}
}
