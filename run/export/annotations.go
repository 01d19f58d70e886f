package export

import (
	"context"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/classify"
	"github.com/ac3/ac3/stages/constraints"
	"github.com/ac3/ac3/stages/pollution"
)

// AnnotationsSchema is the layout of an annotations export: one row per
// conversation and user turn that any annotation stage labelled. Every
// list-valued field is a nested column: refs and pollution_sources are
// list<string> ("1a", "2u": the turn k back and its user or assistant
// message), constraints_new and constraints_registry list<struct<text,
// evidence, type, turn>>. Columns of a stage that did not run are null.
func AnnotationsSchema() *arrow.Schema {
	s, i, f, b := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean
	refs := parquetio.StringListType()
	cons := ConstraintsType()
	md := arrow.NewMetadata([]string{"ac3.schema"}, []string{"annotations/v2"})
	return arrow.NewSchema([]arrow.Field{
		{Name: "conversation_id", Type: s},
		{Name: "turn", Type: i},
		{Name: "user_message", Type: s},
		{Name: "turn_type", Type: s, Nullable: true},
		{Name: "turn_type_confidence", Type: f, Nullable: true},
		{Name: "turn_type_reason", Type: s, Nullable: true},
		{Name: "refs", Type: refs, Nullable: true},
		{Name: "classify_annotator", Type: s, Nullable: true},
		{Name: "constraints_new", Type: cons, Nullable: true},
		{Name: "constraints_registry", Type: cons, Nullable: true},
		{Name: "constraints_annotator", Type: s, Nullable: true},
		{Name: "pollution_present", Type: b, Nullable: true},
		{Name: "pollution_category", Type: s, Nullable: true},
		{Name: "pollution_sources", Type: refs, Nullable: true},
		{Name: "pollution_confidence", Type: f, Nullable: true},
		{Name: "pollution_justification", Type: s, Nullable: true},
		{Name: "pollution_annotator", Type: s, Nullable: true},
	}, &md)
}

// ConstraintsType is list<struct<text, evidence, type, turn>>, a list of
// session constraints (constraints.Constraint) as the annotations export
// writes them.
func ConstraintsType() arrow.DataType {
	return parquetio.ListOfNullable(arrow.StructOf(
		arrow.Field{Name: "text", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "evidence", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "type", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "turn", Type: arrow.PrimitiveTypes.Int64},
	))
}

// constraintValues is cs as a value of a ConstraintsType column.
func constraintValues(cs []constraints.Constraint) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = []any{c.Text, c.Evidence, c.Type, int64(c.Turn)}
	}
	return out
}

// annotationColumns are the annotating stages in column order, each with
// how its stored output fills its columns of an annotations row: the stages
// differ only in their decoder and columns.
var annotationColumns = []struct {
	stage string
	fill  func(out []byte, row []any) error
}{
	{classify.StageName, func(out []byte, row []any) error {
		lb, err := classify.Decode(out)
		if err == nil {
			row[3], row[4], row[5], row[6], row[7] = lb.Type, lb.Confidence, lb.Reason, stringList(lb.Refs), lb.Annotator
		}
		return err
	}},
	{constraints.StageName, func(out []byte, row []any) error {
		rec, err := constraints.Decode(out)
		if err == nil {
			row[8], row[9], row[10] = constraintValues(rec.New), constraintValues(rec.Registry), rec.Annotator
		}
		return err
	}},
	{pollution.StageName, func(out []byte, row []any) error {
		lb, err := pollution.Decode(out)
		if err == nil {
			row[11], row[12], row[13], row[14], row[15], row[16] = lb.Present, lb.Category, stringList(lb.Sources), lb.Confidence, lb.Justification, lb.Annotator
		}
		return err
	}},
}

// stringList is refs as a value of a list<string> column: [] for none.
func stringList(refs []string) []string {
	if refs == nil {
		return []string{}
	}
	return refs
}

// pickVariant chooses which annotator's units to export when a stage ran
// several: the model-backed one when present, else the first planned.
func pickVariant(vs []ledger.Variant) []ledger.Variant {
	for _, v := range vs {
		if v.Name == "llm" {
			return []ledger.Variant{v}
		}
	}
	if len(vs) > 0 {
		return vs[:1]
	}
	return nil
}

// Annotations writes the turn-level annotations of the run (turn type and
// refs, session constraints, pollution of the assistant reply to the turn),
// joined on conversation and turn, in ingest order.
func Annotations(ctx context.Context, l *ledger.Ledger, f Format, path string) (int64, error) {
	plans, err := l.Plans(ctx)
	if err != nil {
		return 0, err
	}
	cv, kv, pv := pickVariant(plans[classify.StageName]), pickVariant(plans[constraints.StageName]), pickVariant(plans[pollution.StageName])
	if len(cv)+len(kv)+len(pv) == 0 {
		return 0, fmt.Errorf("nothing annotated in %s yet: run 'ac3 annotate' first", l.Path())
	}
	rw, err := newRowWriter(f, path, AnnotationsSchema())
	if err != nil {
		return 0, err
	}
	type key struct {
		seq  int64
		turn int
	}
	var n int64
	// Done units placed on a row, per stage: each must find its
	// conversation's turn, and all of them together must be what the run
	// counts as done.
	placed := map[string]int64{}
	err = l.EachPage(ctx, pageSize, func(page []ledger.Stored, after, upto int64) error {
		units := map[string]map[key]ledger.Unit{}
		for stage, vs := range map[string][]ledger.Variant{classify.StageName: cv, constraints.StageName: kv, pollution.StageName: pv} {
			m := map[key]ledger.Unit{}
			err := l.Units(ctx, stage, vs, after, upto, func(u ledger.Unit) error {
				if u.Status == ledger.Done {
					m[key{u.ConvSeq, u.Turn}] = u
				}
				return nil
			})
			if err != nil {
				return err
			}
			units[stage] = m
		}
		for _, s := range page {
			for _, tr := range s.Conv.Turns() {
				k := key{s.Seq, tr.Index}
				row := make([]any, 17)
				row[0], row[1], row[2] = s.Conv.ID, int64(tr.Index), s.Conv.Messages[tr.User].Content
				labelled := false
				for _, c := range annotationColumns {
					u, ok := units[c.stage][k]
					if !ok {
						continue
					}
					placed[c.stage]++
					if err := c.fill(u.Output, row); err != nil {
						return fmt.Errorf("decoding %s unit %s: %w", c.stage, u.Key, err)
					}
					labelled = true
				}
				if !labelled {
					continue
				}
				if err := rw.Write(row); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	if err == nil {
		for stage, vs := range map[string][]ledger.Variant{classify.StageName: cv, constraints.StageName: kv, pollution.StageName: pv} {
			if err = l.CheckUnitsRead(ctx, stage, vs, placed[stage]); err != nil {
				break
			}
		}
	}
	if err != nil {
		rw.Abort()
		return n, err
	}
	return n, rw.Close()
}
