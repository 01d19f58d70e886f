package parquetio

import (
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/ac3/ac3/pipeline/conv"
)

// ConversationBuilder accumulates conversations into one Arrow record batch
// of the canonical schema. Writers in this package and in arrowipc own one
// each and cut a batch whenever it reaches their row or byte limit.
//
// A ConversationBuilder is not safe for concurrent use. Release it when done.
type ConversationBuilder struct {
	rb       *array.RecordBuilder
	id       *array.StringBuilder
	file     *array.StringBuilder
	line     *array.Int64Builder
	row      *array.Int64Builder
	format   *array.StringBuilder
	system   *array.StringBuilder
	msgs     *array.ListBuilder
	msg      *array.StructBuilder
	role     *array.StringBuilder
	content  *array.StringBuilder
	language *array.StringBuilder
	toxic    *array.BooleanBuilder
	redacted *array.BooleanBuilder
	meta     *array.StringBuilder

	bytes int64

	// Sizes of the last batch, used to size the next one up front so the
	// builders do not grow by doubling from nothing after every flush
	// (each doubling zeroes and copies the buffer; with WildChat's large
	// meta that was over a quarter of the write time).
	strs               []*array.StringBuilder
	lastRows, lastMsgs int
	lastData           []int
}

// NewConversationBuilder returns an empty builder that allocates from mem
// (memory.DefaultAllocator when nil).
func NewConversationBuilder(mem memory.Allocator) *ConversationBuilder {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rb := array.NewRecordBuilder(mem, Schema())
	msgs := rb.Field(6).(*array.ListBuilder)
	msg := msgs.ValueBuilder().(*array.StructBuilder)
	b := &ConversationBuilder{
		rb:       rb,
		id:       rb.Field(0).(*array.StringBuilder),
		file:     rb.Field(1).(*array.StringBuilder),
		line:     rb.Field(2).(*array.Int64Builder),
		row:      rb.Field(3).(*array.Int64Builder),
		format:   rb.Field(4).(*array.StringBuilder),
		system:   rb.Field(5).(*array.StringBuilder),
		msgs:     msgs,
		msg:      msg,
		role:     msg.FieldBuilder(0).(*array.StringBuilder),
		content:  msg.FieldBuilder(1).(*array.StringBuilder),
		language: rb.Field(7).(*array.StringBuilder),
		toxic:    rb.Field(8).(*array.BooleanBuilder),
		redacted: rb.Field(9).(*array.BooleanBuilder),
		meta:     rb.Field(10).(*array.StringBuilder),
	}
	b.strs = []*array.StringBuilder{b.id, b.file, b.format, b.system, b.role, b.content, b.language, b.meta}
	b.lastData = make([]int, len(b.strs))
	return b
}

// Append adds c as one row. Text that is not valid UTF-8 is stored with the
// bad bytes replaced by U+FFFD: Arrow and Parquet declare these columns UTF-8
// and pyarrow refuses to load a file that breaks that promise, so one bad
// string from an upstream stage must not make a whole export unreadable.
func (b *ConversationBuilder) Append(c *conv.Conversation) {
	b.str(b.id, c.ID)
	b.str(b.file, c.Source.File)
	b.line.Append(c.Source.Line)
	b.row.Append(c.Source.Row)
	b.str(b.format, c.Format)
	b.optStr(b.system, c.System)
	b.msgs.Append(true)
	for i := range c.Messages {
		m := &c.Messages[i]
		b.msg.Append(true)
		b.str(b.role, string(m.Role))
		b.str(b.content, m.Content)
	}
	b.optStr(b.language, c.Language)
	b.toxic.Append(c.Toxic)
	b.redacted.Append(c.Redacted)
	if len(c.Meta) == 0 {
		b.meta.AppendNull()
	} else {
		b.str(b.meta, string(c.Meta))
	}
	// Fixed-width columns and offsets: a rough 40 bytes a row, 8 a message.
	b.bytes += 40 + 8*int64(len(c.Messages))
}

func (b *ConversationBuilder) str(sb *array.StringBuilder, s string) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	sb.Append(s)
	b.bytes += int64(len(s))
}

func (b *ConversationBuilder) optStr(sb *array.StringBuilder, s string) {
	if s == "" {
		sb.AppendNull()
		return
	}
	b.str(sb, s)
}

// Len reports how many rows are buffered.
func (b *ConversationBuilder) Len() int { return b.id.Len() }

// Bytes reports roughly how many bytes of data are buffered: the text plus
// a small allowance for fixed-width columns and offsets.
func (b *ConversationBuilder) Bytes() int64 { return b.bytes }

// NewRecord returns the buffered rows as a record batch and empties the
// builder. The caller must Release the record.
func (b *ConversationBuilder) NewRecord() arrow.Record {
	if rows := b.Len(); rows > 0 {
		b.lastRows, b.lastMsgs = rows, b.content.Len()
		for i, sb := range b.strs {
			b.lastData[i] = sb.DataLen()
		}
	}
	rec := b.rb.NewRecord()
	b.bytes = 0
	b.rb.Reserve(b.lastRows)
	b.msg.Reserve(b.lastMsgs)
	for i, sb := range b.strs {
		if sb == b.role || sb == b.content {
			sb.Reserve(b.lastMsgs)
		}
		sb.ReserveData(b.lastData[i])
	}
	return rec
}

// Release frees the builder's buffers.
func (b *ConversationBuilder) Release() { b.rb.Release() }
