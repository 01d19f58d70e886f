package parquetio

import (
	"bytes"
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
	// Language provenance (conv.Conversation.LanguageSource and the rest).
	langSource, langDetector *array.StringBuilder
	langConfidence           *array.Float64Builder

	bytes int64

	// Sizes of the last batch, used to size the next one up front so the
	// builders do not grow by doubling from nothing after every flush
	// (each doubling zeroes and copies the buffer; with WildChat's large
	// meta that was over a quarter of the write time). The reservation is
	// made by the first Append after NewRecord, not by NewRecord itself, so
	// that a writer that finishes with the record before appending again
	// never holds two batches' buffers at once.
	strs               []*array.StringBuilder
	lastRows, lastMsgs int
	lastData           []int
	reserve            bool
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

		langSource:     rb.Field(11).(*array.StringBuilder),
		langDetector:   rb.Field(12).(*array.StringBuilder),
		langConfidence: rb.Field(13).(*array.Float64Builder),
	}
	b.strs = []*array.StringBuilder{b.id, b.file, b.format, b.system, b.role, b.content, b.language, b.meta, b.langSource, b.langDetector}
	b.lastData = make([]int, len(b.strs))
	return b
}

// Append adds c as one row. Text that is not valid UTF-8 is stored with the
// bad bytes replaced by U+FFFD: Arrow and Parquet declare these columns UTF-8
// and pyarrow refuses to load a file that breaks that promise, so one bad
// string from an upstream stage must not make a whole export unreadable.
func (b *ConversationBuilder) Append(c *conv.Conversation) {
	if b.reserve {
		b.reserveLast()
	}
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
		b.raw(b.meta, c.Meta)
	}
	b.optStr(b.langSource, c.LanguageSource)
	b.optStr(b.langDetector, c.LanguageDetector)
	if c.LanguageConfidence == 0 {
		b.langConfidence.AppendNull()
	} else {
		b.langConfidence.Append(c.LanguageConfidence)
	}
	// Fixed-width columns and offsets: a rough 40 bytes a row, 8 a message.
	b.bytes += 40 + 8*int64(len(c.Messages))
}

func (b *ConversationBuilder) str(sb *array.StringBuilder, s string) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	b.ensureData(sb, len(s))
	sb.Append(s)
	b.bytes += int64(len(s))
}

// ensureData makes room for n more bytes in sb's data buffer. Left to
// itself Arrow grows a full buffer to the next power of two, so one row
// past the reservation could turn an 18 MB buffer into 32 MB (with both
// alive during the copy); a quarter more is plenty, as a byte cap ends the
// batch soon after. The first batch, with no earlier one to size it, still
// doubles: growing from nothing by quarters would copy too often.
func (b *ConversationBuilder) ensureData(sb *array.StringBuilder, n int) {
	if c := sb.DataCap(); sb.DataLen()+n > c {
		grow := c
		if b.lastRows > 0 {
			grow = c / 4
		}
		sb.ReserveData(max(n, grow, 64<<10))
	}
}

// raw is str for text held as bytes, without converting it to a string
// first (a copy of what is often the row's largest value).
func (b *ConversationBuilder) raw(sb *array.StringBuilder, p []byte) {
	if !utf8.Valid(p) {
		p = bytes.ToValidUTF8(p, []byte("\uFFFD"))
	}
	b.ensureData(sb, len(p))
	sb.BinaryBuilder.Append(p)
	b.bytes += int64(len(p))
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
		b.reserve = true
	}
	rec := b.rb.NewRecord()
	b.bytes = 0
	return rec
}

// reserveLast sizes the empty builders for a batch like the last one, with
// an eighth more room: batches cut at a byte cap vary a little, and a
// buffer that overflows its reservation is copied whole (ensureData).
func (b *ConversationBuilder) reserveLast() {
	b.reserve = false
	grow := func(n int) int { return n + n/8 }
	b.rb.Reserve(grow(b.lastRows))
	b.msg.Reserve(grow(b.lastMsgs))
	for i, sb := range b.strs {
		if sb == b.role || sb == b.content {
			sb.Reserve(grow(b.lastMsgs))
		}
		sb.ReserveData(grow(b.lastData[i]))
	}
}

// Release frees the builder's buffers.
func (b *ConversationBuilder) Release() { b.rb.Release() }
