package curated

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/ac3/ac3/pipeline/conv"
)

// Context is the curated context before user turn Turn under one strategy.
// Tokens is what sending it as a chat request costs (content, per-message
// framing and the reply primer; see package tokens) and Messages is how many
// messages Materialize gives.
//
// The contexts one Contexts call returns may share the backing array of
// their Parts (each turn's parts are a prefix of the next turn's), so treat
// Parts as read-only; appending is safe, since the slices are capped.
type Context struct {
	Strategy string `json:"strategy"`
	Turn     int    `json:"turn"`
	Parts    []Part `json:"parts"`
	Tokens   int    `json:"tokens"`
	Messages int    `json:"messages"`
	// Info is what a model-backed strategy decided and spent for this
	// context (see Info); zero for deterministic strategies.
	Info Info `json:"info,omitzero"`
}

// Materialize returns the context's chat messages for conversation c.
func (x Context) Materialize(c *conv.Conversation) []conv.Message { return Materialize(c, x.Parts) }

// MaterializeChecked is Materialize for a context read back from a run
// file: one that does not fit c, or has no conversation, is an error for
// the reader to report (the run does not add up), never a panic.
func (x Context) MaterializeChecked(c *conv.Conversation) ([]conv.Message, error) {
	if c == nil {
		return nil, errors.New("its conversation is not in the run")
	}
	if err := Validate(c, x.Parts); err != nil {
		return nil, err
	}
	return Materialize(c, x.Parts), nil
}

// codecVersion leads every encoded context, so a later change to the layout
// can still read what earlier runs stored.
const codecVersion = 1

// compactContext is the stored layout. Parts are written as:
//
//	i       a reference to message i (or -1, the system message);
//	[a,b]   references to messages a through b, for runs of three or more,
//	        which is what fc and the user turns of ao mostly are;
//	{...}   anything else: "r" role, "i" reference (absent for literals),
//	        "x" text, "f" filler words, "j" 1 when joined.
type compactContext struct {
	V int               `json:"v"`
	S string            `json:"s"`
	T int               `json:"t"`
	K int               `json:"k"`
	N int               `json:"n"`
	P []json.RawMessage `json:"p"`
	// A is the optional Info. Contexts stored before it existed have no
	// "a" and decode with a zero Info, so the layout version stays 1.
	A *Info `json:"a,omitempty"`
}

type compactPart struct {
	R conv.Role `json:"r,omitempty"`
	I *int      `json:"i,omitempty"`
	X string    `json:"x,omitempty"`
	F int       `json:"f,omitempty"`
	J int       `json:"j,omitempty"`
}

// EncodeContext returns the compact JSON form of x for storage. It is a few
// bytes per part for references, whatever the length of the messages.
func EncodeContext(x Context) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"v":`)
	b.WriteString(strconv.Itoa(codecVersion))
	b.WriteString(`,"s":`)
	name, err := json.Marshal(x.Strategy)
	if err != nil {
		return nil, fmt.Errorf("encoding context: %w", err)
	}
	b.Write(name)
	fmt.Fprintf(&b, `,"t":%d,"k":%d,"n":%d,"p":[`, x.Turn, x.Tokens, x.Messages)
	ps := x.Parts
	for k := 0; k < len(ps); {
		if k > 0 {
			b.WriteByte(',')
		}
		p := ps[k]
		if isPlainRef(p) {
			j := k + 1
			for j < len(ps) && isPlainRef(ps[j]) && ps[j].Ref == ps[j-1].Ref+1 && p.Ref >= 0 {
				j++
			}
			if j-k >= 3 {
				fmt.Fprintf(&b, "[%d,%d]", p.Ref, ps[j-1].Ref)
				k = j
				continue
			}
			b.WriteString(strconv.Itoa(p.Ref))
			k++
			continue
		}
		cp := compactPart{R: p.Role, X: p.Text, F: p.Fill}
		if p.Ref != RefText {
			cp.I = &p.Ref
		}
		if p.Join {
			cp.J = 1
		}
		obj, err := json.Marshal(cp)
		if err != nil {
			return nil, fmt.Errorf("encoding context part %d: %w", k, err)
		}
		b.Write(obj)
		k++
	}
	b.WriteByte(']')
	if !x.Info.IsZero() {
		info, err := json.Marshal(x.Info)
		if err != nil {
			return nil, fmt.Errorf("encoding context info: %w", err)
		}
		b.WriteString(`,"a":`)
		b.Write(info)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func isPlainRef(p Part) bool {
	return p.Ref >= RefSystem && p.Fill == 0 && !p.Join && p.Role == "" && p.Text == ""
}

// maxRun bounds a decoded run of references, so a corrupt record cannot make
// the decoder allocate without limit. No chat log has a million messages.
const maxRun = 1 << 20

// DecodeContext reads a context written by EncodeContext.
func DecodeContext(data []byte) (Context, error) {
	var cc compactContext
	if err := json.Unmarshal(data, &cc); err != nil {
		return Context{}, fmt.Errorf("decoding context: %w", err)
	}
	if cc.V != codecVersion {
		return Context{}, fmt.Errorf("decoding context: unknown layout version %d", cc.V)
	}
	x := Context{Strategy: cc.S, Turn: cc.T, Tokens: cc.K, Messages: cc.N, Parts: make([]Part, 0, len(cc.P))}
	if cc.A != nil {
		x.Info = *cc.A
	}
	for k, raw := range cc.P {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			return Context{}, fmt.Errorf("decoding context part %d: empty", k)
		}
		switch raw[0] {
		case '[':
			var run [2]int
			if err := json.Unmarshal(raw, &run); err != nil {
				return Context{}, fmt.Errorf("decoding context part %d: %w", k, err)
			}
			if run[0] < 0 || run[1] < run[0] || run[1]-run[0] >= maxRun {
				return Context{}, fmt.Errorf("decoding context part %d: bad run %v", k, run)
			}
			for i := run[0]; i <= run[1]; i++ {
				x.Parts = append(x.Parts, MessagePart(i))
			}
		case '{':
			var cp compactPart
			if err := json.Unmarshal(raw, &cp); err != nil {
				return Context{}, fmt.Errorf("decoding context part %d: %w", k, err)
			}
			p := Part{Role: cp.R, Ref: RefText, Text: cp.X, Fill: cp.F, Join: cp.J != 0}
			if cp.I != nil {
				p.Ref = *cp.I
			}
			x.Parts = append(x.Parts, p)
		default:
			i, err := strconv.Atoi(string(raw))
			if err != nil || i < RefSystem {
				return Context{}, fmt.Errorf("decoding context part %d: bad reference %s", k, raw)
			}
			x.Parts = append(x.Parts, MessagePart(i))
		}
	}
	return x, nil
}
