package export

import (
	"context"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/ac3/ac3/pipeline/ledger"
)

// KindDuplicates is the export of the near-duplicate pairs ingest --dedupe
// near decided: each dropped conversation, where it was read, the kept
// conversation it matched and their estimated similarity.
const KindDuplicates = "duplicates"

// Duplicates writes every near-duplicate pair of l to path, in the order
// ingest dropped them: the dropped conversation's id, file, line (text
// formats) and row (columnar formats), the kept conversation's id and seq,
// their estimated Jaccard similarity over the user turns, and the reason
// (near_duplicate). A run ingested without --dedupe near has none: the
// file is written with no rows.
func Duplicates(ctx context.Context, l *ledger.Ledger, f Format, path string) (int64, error) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "dropped_id", Type: arrow.BinaryTypes.String},
		{Name: "file", Type: arrow.BinaryTypes.String},
		{Name: "line", Type: arrow.PrimitiveTypes.Int64},
		{Name: "row", Type: arrow.PrimitiveTypes.Int64},
		{Name: "kept_id", Type: arrow.BinaryTypes.String},
		{Name: "kept_seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "similarity", Type: arrow.PrimitiveTypes.Float64},
		{Name: "reason", Type: arrow.BinaryTypes.String},
	}, nil)
	return writeRows(f, path, sc, func(write func(row []any) error) error {
		return l.EachNearDuplicate(ctx, func(p ledger.NearPair) error {
			return write([]any{p.DroppedID, p.File, p.Line, p.Row, p.KeptID, p.KeptSeq, p.Similarity, ledger.DropNearDuplicate})
		})
	})
}
