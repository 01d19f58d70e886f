package export

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// CuratedSchema is the layout of a curated export: one row per conversation,
// turn and strategy. origins says, per message of the context, where it came
// from (see SFTRow): "dataset:N" for message N of the conversation unchanged,
// "inserted" for text the strategy wrote, "filler:N", "system", and parts
// joined into one message with "+".
func CuratedSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"ac3.schema"}, []string{"curated/v2"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
		{Name: "strategy", Type: arrow.BinaryTypes.String},
		{Name: "version", Type: arrow.BinaryTypes.String},
		{Name: "messages", Type: parquetio.MessagesType()},
		{Name: "origins", Type: parquetio.StringListType()},
		{Name: "tokens", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n_messages", Type: arrow.PrimitiveTypes.Int64},
		{Name: "target", Type: arrow.BinaryTypes.String, Nullable: true},
	}, &md)
}

// sftSchema is one chat fine-tuning example: the curated context followed by
// the dataset's own reply, in the shape OpenAI's fine-tuning API takes (the
// messages are SFTMessage values, weights included). SFT is JSONL only.
func sftSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{{Name: "messages", Type: parquetio.MessagesType()}}, nil)
}

// SFTMetaSchema is the layout of an SFT export's metadata file (MetaPath),
// one line per line of the SFT file, in the same order: line (1-based), the
// source ids (conversation_id, turn, and where the conversation was read:
// source_file, source_line, source_row), the strategy and its version, the
// index of the target among the conversation's messages, and origins, where
// each message of the line came from (see SFTRow), the target included.
func SFTMetaSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"ac3.schema"}, []string{"sft-meta/v1"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "line", Type: arrow.PrimitiveTypes.Int64},
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
		{Name: "strategy", Type: arrow.BinaryTypes.String},
		{Name: "version", Type: arrow.BinaryTypes.String},
		{Name: "source_file", Type: arrow.BinaryTypes.String},
		{Name: "source_line", Type: arrow.PrimitiveTypes.Int64},
		{Name: "source_row", Type: arrow.PrimitiveTypes.Int64},
		{Name: "target", Type: arrow.PrimitiveTypes.Int64},
		{Name: "origins", Type: parquetio.StringListType()},
	}, &md)
}

// CuratedOptions choose what a curated export holds.
type CuratedOptions struct {
	// Strategies are the curate strategies to export, as the curate stage
	// names them ("fc", "ao+constraints"); empty: every strategy of the
	// curate stage's current plan.
	Strategies []string
	// TrainOn (SFT only) says which assistant messages have weight 1;
	// empty means TrainReplies.
	TrainOn TrainOn
}

// StrategyList reads a comma-separated list of strategies for
// CuratedOptions.Strategies; an empty name is an error, not skipped, since
// it is most likely a slip.
func StrategyList(s string) ([]string, error) {
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		if name = strings.TrimSpace(name); name == "" {
			return nil, errors.New("an empty strategy name")
		}
		out = append(out, name)
	}
	return out, nil
}

// Curated writes every done curated context of the strategies the curate
// stage last ran, materialized against its conversation, to path. target is
// the dataset's own assistant reply to the turn (null when there is none),
// which is what fine-tuning on curated contexts trains towards. With the SFT
// format each row is {"messages": context + [target]}, weighted (see
// SFTRow), its metadata goes to MetaPath(path), and turns without a reply
// in the dataset are left out.
func Curated(ctx context.Context, l *ledger.Ledger, f Format, path string) (int64, error) {
	st, err := exportCurated(ctx, l, f, path, CuratedOptions{})
	return st.Rows, err
}

// chosenStrategies resolves CuratedOptions.Strategies against the curate
// stage's plan: the variants to export, in plan order.
func chosenStrategies(l *ledger.Ledger, planned []ledger.Variant, want []string) ([]ledger.Variant, error) {
	if len(want) == 0 {
		return planned, nil
	}
	names := make([]string, len(planned))
	for i, v := range planned {
		names[i] = v.Name
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			return nil, fmt.Errorf("strategy %q was not curated in %s (its curate stage ran %s)", w, l.Path(), strings.Join(names, ", "))
		}
	}
	var out []ledger.Variant
	for _, v := range planned {
		if slices.Contains(want, v.Name) {
			out = append(out, v)
		}
	}
	return out, nil
}

// exportCurated is Curated with options, also counting what it leaves out.
func exportCurated(ctx context.Context, l *ledger.Ledger, f Format, path string, opts CuratedOptions) (st Stats, err error) {
	plans, err := l.Plans(ctx)
	if err != nil {
		return st, err
	}
	variants := plans[curate.StageName]
	if len(variants) == 0 {
		return st, fmt.Errorf("nothing curated in %s yet: run 'ac3 curate' first", l.Path())
	}
	chosen, err := chosenStrategies(l, variants, opts.Strategies)
	if err != nil {
		return st, err
	}
	want := map[string]bool{}
	for _, v := range chosen {
		want[v.Name] = true
		st.Strategies = append(st.Strategies, v.Name)
	}
	on := opts.TrainOn
	if on == "" {
		on = TrainReplies
	}
	sc := CuratedSchema()
	if f == SFT {
		sc = sftSchema()
	}
	rw, err := newRowWriter(f, path, sc)
	if err != nil {
		return st, err
	}
	var meta *rowWriter
	if f == SFT {
		mp := MetaPath(path)
		if meta, err = newRowWriter(JSONL, mp, SFTMetaSchema()); err != nil {
			rw.Abort()
			return st, err
		}
		st.Files = []string{mp}
	}
	var skipped skips
	var read int64 // done units read, checked against the run's count
	err = l.EachPage(ctx, pageSize, func(page []ledger.Stored, after, upto int64) error {
		bySeq := bySeq(page)
		return l.Units(ctx, curate.StageName, variants, after, upto, func(u ledger.Unit) error {
			if u.Status == ledger.Done {
				read++
			}
			switch {
			case !want[u.Variant]:
				if u.Status == ledger.Done {
					skipped.add(SkippedStrategy)
				}
				return nil
			case u.Status != ledger.Done:
				skipped.add(SkippedFailed)
				return nil
			}
			c := bySeq[u.ConvSeq]
			x, err := curated.DecodeContext(u.Output)
			if err != nil {
				return fmt.Errorf("decoding unit %s: %w", u.Key, err)
			}
			inconsistent := func(err error) error {
				return l.Inconsistent(fmt.Errorf("curated unit %s (conversation %d, turn %d): %w", u.Key, u.ConvSeq, u.Turn, err))
			}
			if c == nil {
				return inconsistent(errors.New("its conversation is not in the run"))
			}
			ti := replyIndex(c, u.Turn)
			if f == SFT {
				if ti < 0 {
					skipped.add(SkippedNoReply)
					return nil
				}
				row, origins, err := SFTRow(c, x, ti, on) // checks x against c
				if err != nil {
					return inconsistent(err)
				}
				st.Rows++
				if err := rw.Write([]any{row}); err != nil {
					return err
				}
				return meta.Write([]any{st.Rows, c.ID, int64(u.Turn), u.Variant, u.Version, c.Source.File, c.Source.Line, c.Source.Row, int64(ti), origins})
			}
			msgs, err := x.MaterializeChecked(c)
			if err != nil {
				return inconsistent(err)
			}
			var target any
			if ti >= 0 {
				target = c.Messages[ti].Content
			}
			st.Rows++
			return rw.Write([]any{c.ID, int64(u.Turn), u.Variant, u.Version, msgs, contextOrigins(x.Parts), int64(x.Tokens), int64(len(msgs)), target})
		})
	})
	if err == nil {
		err = l.CheckUnitsRead(ctx, curate.StageName, variants, read)
	}
	st.Skipped = skipped
	if err != nil {
		rw.Abort()
		if meta != nil {
			meta.Abort()
		}
		return st, err
	}
	// The metadata first: if it cannot be finished, neither is the SFT
	// file, and a metadata file is never left without its SFT file.
	if meta != nil {
		if err := meta.Close(); err != nil {
			rw.Abort()
			return st, err
		}
	}
	if err := rw.Close(); err != nil {
		if meta != nil {
			err = errors.Join(err, removeFile(MetaPath(path)))
		}
		return st, err
	}
	return st, nil
}

// contextOrigins says where each message of a context's parts came from,
// as SFTRow's origins do.
func contextOrigins(parts []curated.Part) []string {
	var out []string
	for i, p := range parts {
		if p.Join && i > 0 {
			out[len(out)-1] += "+" + partOrigin(p)
			continue
		}
		out = append(out, partOrigin(p))
	}
	return out
}

// bySeq indexes a page of conversations by their seq, for joining units.
func bySeq(page []ledger.Stored) map[int64]*conv.Conversation {
	m := make(map[int64]*conv.Conversation, len(page))
	for _, s := range page {
		m[s.Seq] = s.Conv
	}
	return m
}

// replyIndex is the index of a_t, the dataset's assistant message answering
// user turn t, or -1.
func replyIndex(c *conv.Conversation, t int) int {
	if c == nil {
		return -1
	}
	for _, tr := range c.Turns() {
		if tr.Index == t {
			return tr.Reply
		}
	}
	return -1
}
