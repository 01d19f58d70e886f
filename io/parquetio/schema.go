package parquetio

import (
	"github.com/apache/arrow/go/v17/arrow"
)

// SchemaKey is the schema metadata key that marks an Arrow schema (and so a
// Parquet or Arrow IPC file) as ac3's, and SchemaVersion its value for the
// schema built by Schema. A reader that sees another version refuses the
// file instead of guessing at its columns.
const (
	SchemaKey     = "ac3.schema"
	SchemaVersion = "conversation/v1"
)

// Column names of the canonical schema, in order.
const (
	ColID         = "id"
	ColSourceFile = "source_file"
	ColSourceLine = "source_line"
	ColSourceRow  = "source_row"
	ColFormat     = "format"
	ColSystem     = "system"
	ColMessages   = "messages"
	ColLanguage   = "language"
	ColToxic      = "toxic"
	ColRedacted   = "redacted"
	ColMeta       = "meta"
	// Where language came from (conv.Conversation.LanguageSource), and for
	// an identified one the detector and its confidence. Last, so files
	// written before they existed keep their column positions.
	ColLanguageSource     = "language_source"
	ColLanguageDetector   = "language_detector"
	ColLanguageConfidence = "language_confidence"
)

// Field names inside an element of a messages list.
const (
	FieldRole    = "role"
	FieldContent = "content"
)

// MessagesType returns list<struct<role: utf8, content: utf8>>, the Arrow type
// of a conversation's messages. The list element is named "element" and is
// nullable because that is how the Parquet LIST convention (and pyarrow)
// spell it; the writer writes it that way whatever we ask (pqschema.go),
// and matching it keeps the schema read back from a file equal to the one
// written.
func MessagesType() arrow.DataType {
	return arrow.ListOfField(arrow.Field{
		Name: "element",
		Type: messageStructType(),
		// Always true: see the doc comment.
		Nullable: true,
	})
}

func messageStructType() *arrow.StructType {
	return arrow.StructOf(
		arrow.Field{Name: FieldRole, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: FieldContent, Type: arrow.BinaryTypes.String},
	)
}

// Schema returns the canonical conversation/v1 schema. Each call builds a new
// value, so callers may not change one another's copy.
//
// Empty System, Language, Meta and language provenance are written as
// nulls (a confidence of 0 too), which is how the
// conv package spells "absent"; Source.Line and Source.Row are stored as they
// are, so a conversation read back keeps the position in its original input
// rather than in the columnar file.
func Schema() *arrow.Schema {
	md := arrow.NewMetadata([]string{SchemaKey}, []string{SchemaVersion})
	return arrow.NewSchema([]arrow.Field{
		{Name: ColID, Type: arrow.BinaryTypes.String},
		{Name: ColSourceFile, Type: arrow.BinaryTypes.String},
		{Name: ColSourceLine, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColSourceRow, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColFormat, Type: arrow.BinaryTypes.String},
		{Name: ColSystem, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: ColMessages, Type: MessagesType()},
		{Name: ColLanguage, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: ColToxic, Type: arrow.FixedWidthTypes.Boolean},
		{Name: ColRedacted, Type: arrow.FixedWidthTypes.Boolean},
		{Name: ColMeta, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: ColLanguageSource, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: ColLanguageDetector, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: ColLanguageConfidence, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, &md)
}
