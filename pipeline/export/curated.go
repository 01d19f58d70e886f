package export

import (
	"context"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/curate"
)

// CuratedSchema is the layout of a curated export: one row per conversation,
// turn and strategy.
func CuratedSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"ac3.schema"}, []string{"curated/v1"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
		{Name: "strategy", Type: arrow.BinaryTypes.String},
		{Name: "version", Type: arrow.BinaryTypes.String},
		{Name: "messages", Type: parquetio.MessagesType()},
		{Name: "tokens", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n_messages", Type: arrow.PrimitiveTypes.Int64},
		{Name: "target", Type: arrow.BinaryTypes.String, Nullable: true},
	}, &md)
}

// sftSchema is one chat fine-tuning example: the curated context followed by
// the dataset's own reply, in the shape OpenAI's fine-tuning API takes.
func sftSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{{Name: "messages", Type: parquetio.MessagesType()}}, nil)
}

// Curated writes every done curated context of the strategies the curate
// stage last ran, materialized against its conversation, to path. target is
// the dataset's own assistant reply to the turn (null when there is none),
// which is what fine-tuning on curated contexts trains towards. With the SFT
// format each row is {"messages": context + [target]} and turns without a
// reply in the dataset are left out.
func Curated(ctx context.Context, l *ledger.Ledger, f Format, path string) (int64, error) {
	n, _, err := curated(ctx, l, f, path)
	return n, err
}

// curated is Curated, also counting the turns an SFT export leaves out.
func curated(ctx context.Context, l *ledger.Ledger, f Format, path string) (n, noReply int64, err error) {
	plans, err := l.Plans(ctx)
	if err != nil {
		return 0, 0, err
	}
	variants := plans[curate.StageName]
	if len(variants) == 0 {
		return 0, 0, fmt.Errorf("nothing curated in %s yet: run 'ac3 curate' first", l.Path())
	}
	sc := CuratedSchema()
	if f == SFT {
		sc = sftSchema()
	}
	rw, err := newRowWriter(f, path, sc)
	if err != nil {
		return 0, 0, err
	}
	var read int64 // done units read, checked against the run's count
	err = l.EachPage(ctx, pageSize, func(page []ledger.Stored, after, upto int64) error {
		bySeq := bySeq(page)
		return l.Units(ctx, curate.StageName, variants, after, upto, func(u ledger.Unit) error {
			if u.Status != ledger.Done {
				return nil
			}
			read++
			c := bySeq[u.ConvSeq]
			x, err := curate.DecodeContext(u.Output)
			if err != nil {
				return fmt.Errorf("decoding unit %s: %w", u.Key, err)
			}
			msgs, err := x.MaterializeChecked(c)
			if err != nil {
				return l.Inconsistent(fmt.Errorf("curated unit %s (conversation %d, turn %d): %w", u.Key, u.ConvSeq, u.Turn, err))
			}
			var target any
			a, ok := reply(c, u.Turn)
			if ok {
				target = a
			}
			if f == SFT {
				if !ok {
					noReply++
					return nil
				}
				n++
				return rw.Write([]any{append(msgs, conv.Message{Role: conv.Assistant, Content: a})})
			}
			n++
			return rw.Write([]any{c.ID, int64(u.Turn), u.Variant, u.Version, msgs, int64(x.Tokens), int64(len(msgs)), target})
		})
	})
	if err == nil {
		err = l.CheckUnitsRead(ctx, curate.StageName, variants, read)
	}
	if err != nil {
		rw.Abort()
		return n, noReply, err
	}
	return n, noReply, rw.Close()
}

// bySeq indexes a page of conversations by their seq, for joining units.
func bySeq(page []ledger.Stored) map[int64]*conv.Conversation {
	m := make(map[int64]*conv.Conversation, len(page))
	for _, s := range page {
		m[s.Seq] = s.Conv
	}
	return m
}

// reply is a_t, the dataset's assistant message answering user turn t.
func reply(c *conv.Conversation, t int) (string, bool) {
	for _, tr := range c.Turns() {
		if tr.Index == t && tr.Reply >= 0 {
			return c.Messages[tr.Reply].Content, true
		}
	}
	return "", false
}
