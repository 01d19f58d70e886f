package export

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
)

// TrainOn says which assistant messages of an SFT row are trained on
// (weight 1). Whatever it says, an assistant message that is not a copy of
// a reply from the dataset (ao's placeholder, filler, a summary, a reset's
// acknowledgement: anything a strategy wrote) has weight 0.
type TrainOn string

const (
	// TrainReplies (the default) trains on every assistant message that is
	// a dataset reply: the target and the replies the context kept.
	TrainReplies TrainOn = "replies"
	// TrainTarget trains on the target only: each dataset reply is then
	// trained on once per strategy, as the target of its own turn, instead
	// of again in every later turn's row that keeps it.
	TrainTarget TrainOn = "target"
)

// SFTMessage is one message of an SFT row, in OpenAI's chat fine-tuning
// shape: weight is set on assistant messages only (0 or 1), the only role
// the format takes it on.
type SFTMessage struct {
	Role    conv.Role `json:"role"`
	Content string    `json:"content"`
	Weight  *int      `json:"weight,omitempty"`
}

var (
	weight0, weight1 = 0, 1
)

// Where a message of a curated context came from, as SFTRow's origins
// spell each part: a message made of several parts (joined: concat's user
// turns, ao's note after the system message, augment's text after the user
// turn) lists them with "+".
const (
	OriginSystem   = "system"   // the conversation's system message
	OriginDataset  = "dataset"  // "dataset:N", message N of the conversation, unchanged
	OriginFiller   = "filler"   // "filler:N", filler standing in for message N
	OriginInserted = "inserted" // text the strategy wrote
)

// partOrigin names where one part of a curated context comes from.
func partOrigin(p curated.Part) string {
	switch {
	case p.Ref == curated.RefSystem:
		return OriginSystem
	case p.Ref == curated.RefText:
		return OriginInserted
	case p.Fill > 0:
		return OriginFiller + ":" + strconv.Itoa(p.Ref)
	default:
		return OriginDataset + ":" + strconv.Itoa(p.Ref)
	}
}

// isDatasetReply reports whether the parts of one message are exactly one
// unchanged assistant message of c: a lone reference, no filler, no text
// joined to it. This is decided from the context's structure, never from
// the text, so a placeholder that happens to read like a reply, or a reply
// that reads like a placeholder, is still told apart.
func isDatasetReply(c *conv.Conversation, group []curated.Part) bool {
	if len(group) != 1 {
		return false
	}
	p := group[0]
	return p.Ref >= 0 && p.Ref < len(c.Messages) && p.Fill == 0 && p.Text == "" && p.Role == "" &&
		c.Messages[p.Ref].Role == conv.Assistant
}

// SFTRow is the chat fine-tuning row of curated context x of c: its
// messages, then message target of c (the dataset's reply to the turn) as
// the last, assistant message. Assistant messages carry a weight: 1 on the
// target, and with TrainReplies on every message that is a dataset reply
// kept unchanged; 0 on every other, which is text a strategy put in the
// reply's place. origins says, per message, where it came from (see the
// Origin constants), the target included. x must fit c (contexts read back
// from a run are checked first: see curated.Context.MaterializeChecked).
func SFTRow(c *conv.Conversation, x curated.Context, target int, on TrainOn) (msgs []SFTMessage, origins []string, err error) {
	if target < 0 || target >= len(c.Messages) || c.Messages[target].Role != conv.Assistant {
		return nil, nil, fmt.Errorf("target %d is not an assistant message of conversation %q", target, c.ID)
	}
	mat, err := x.MaterializeChecked(c)
	if err != nil {
		return nil, nil, err
	}
	msgs = make([]SFTMessage, 0, len(mat)+1)
	origins = make([]string, 0, len(mat)+1)
	parts := x.Parts
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].Join {
			j++
		}
		group := parts[i:j]
		k := len(msgs)
		if k >= len(mat) {
			return nil, nil, fmt.Errorf("context has more messages than it materializes (%d)", len(mat))
		}
		m := SFTMessage{Role: mat[k].Role, Content: mat[k].Content}
		if m.Role == conv.Assistant {
			m.Weight = &weight0
			if on != TrainTarget && isDatasetReply(c, group) {
				m.Weight = &weight1
			}
		}
		o := make([]string, len(group))
		for g, p := range group {
			o[g] = partOrigin(p)
		}
		msgs = append(msgs, m)
		origins = append(origins, strings.Join(o, "+"))
		i = j
	}
	if len(msgs) != len(mat) {
		return nil, nil, fmt.Errorf("context groups into %d messages but materializes %d", len(msgs), len(mat))
	}
	msgs = append(msgs, SFTMessage{Role: conv.Assistant, Content: c.Messages[target].Content, Weight: &weight1})
	origins = append(origins, OriginDataset+":"+strconv.Itoa(target))
	return msgs, origins, nil
}

// MetaPath is where an SFT export to out writes its metadata, line for line
// with out: NAME.meta.jsonl for NAME.jsonl, keeping a compression suffix
// (train.jsonl.zst: train.meta.jsonl.zst); any other name gets
// .meta.jsonl appended. OpenAI's fine-tuning format takes no keys on a line
// but messages (and tools, parallel_tool_calls, functions), so the
// strategy and the source ids go in this file instead.
func MetaPath(out string) string {
	base, comp := out, ""
	for _, z := range []string{".zst", ".gz"} {
		if strings.HasSuffix(strings.ToLower(base), z) {
			base, comp = base[:len(base)-len(z)], base[len(base)-len(z):]
			break
		}
	}
	if strings.HasSuffix(strings.ToLower(base), ".jsonl") {
		base = base[:len(base)-len(".jsonl")]
	}
	return base + ".meta.jsonl" + comp
}
