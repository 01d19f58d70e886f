// Package export writes what a run holds to files other tools read. Six
// kinds, one per Kind constant: conversations (the kept conversations,
// canonical Parquet or JSONL), curated (the context of every strategy, one
// row per conversation, turn and strategy, as a list of messages or as
// OpenAI chat fine-tuning rows), annotations (turn types, constraints,
// pollution), quarantine (the bad records with file, line and reason),
// preferences (TRL DPO rows from the judge's verdicts) and winners (SFT rows
// of the answers that won). Every list-valued field is a nested column in
// Parquet and an array in JSONL. Rows come out in ingest order, then turn,
// then strategy, so an export is the same bytes however the work that
// produced it was scheduled or interrupted; an export of unfinished work is
// refused unless the caller asks for a partial one (Options.Partial).
package export

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/ledger"
)

// Format is an output format.
type Format string

// The output formats. SFT is OpenAI chat fine-tuning JSONL (a .jsonl file,
// with a .meta.jsonl beside it; see MetaPath) and applies to curated
// contexts only.
const (
	Parquet Format = "parquet"
	JSONL   Format = "jsonl"
	SFT     Format = "sft"
)

// ParseFormat accepts parquet, jsonl and sft (a .zst or .gz out path
// compresses JSONL and SFT).
func ParseFormat(s string) (Format, error) {
	switch Format(strings.ToLower(s)) {
	case Parquet:
		return Parquet, nil
	case JSONL, "jsonl.zst", "jsonl-zst":
		return JSONL, nil
	case SFT:
		return SFT, nil
	}
	return "", fmt.Errorf("unknown format %q: want parquet, jsonl or sft", s)
}

const pageSize = 512

// Conversations writes every kept conversation of the run to path.
func Conversations(ctx context.Context, l *ledger.Ledger, f Format, path string) (int64, error) {
	type convWriter interface {
		Close() error
	}
	var n int64
	var write func(ledger.Stored) error
	var closer convWriter
	var abort func()
	switch f {
	case Parquet:
		w, err := parquetio.Create(path, parquetio.WriterOptions{})
		if err != nil {
			return 0, fmt.Errorf("creating %s: %w", path, err)
		}
		write = func(s ledger.Stored) error { return w.Write(s.Conv) }
		closer, abort = w, func() { w.Abort() }
	default:
		w, err := jsonl.Create(path)
		if err != nil {
			return 0, fmt.Errorf("creating %s: %w", path, err)
		}
		write = func(s ledger.Stored) error { return w.Write(s.Conv) }
		closer, abort = w, func() { w.Abort() }
	}
	err := l.EachPage(ctx, pageSize, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			if err := write(s); err != nil {
				return fmt.Errorf("writing conversation %s to %s: %w", s.Conv.ID, path, err)
			}
			n++
		}
		return nil
	})
	if err != nil {
		abort()
		return n, err
	}
	if err := closer.Close(); err != nil {
		return n, fmt.Errorf("finishing %s: %w", path, err)
	}
	return n, nil
}

// Quarantine writes every quarantined record to path.
func Quarantine(ctx context.Context, l *ledger.Ledger, f Format, path string) (int64, error) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "input", Type: arrow.BinaryTypes.String},
		{Name: "file", Type: arrow.BinaryTypes.String},
		{Name: "line", Type: arrow.PrimitiveTypes.Int64},
		{Name: "row", Type: arrow.PrimitiveTypes.Int64},
		{Name: "reason", Type: arrow.BinaryTypes.String},
		{Name: "detail", Type: arrow.BinaryTypes.String},
		{Name: "excerpt", Type: arrow.BinaryTypes.String},
	}, nil)
	return writeRows(f, path, sc, func(write func(row []any) error) error {
		return l.Quarantine(ctx, func(q ledger.Quarantined) error {
			return write([]any{q.Input, q.Source.File, q.Source.Line, q.Source.Row, string(q.Reason), q.Detail, q.Excerpt})
		})
	})
}

// writeRows writes to path, laid out as sc, the rows each hands to write,
// and counts them; an error removes the file. Exports that write one row
// per record they read share it.
func writeRows(f Format, path string, sc *arrow.Schema, each func(write func(row []any) error) error) (int64, error) {
	rw, err := newRowWriter(f, path, sc)
	if err != nil {
		return 0, err
	}
	var n int64
	err = each(func(row []any) error {
		n++
		return rw.Write(row)
	})
	if err != nil {
		rw.Abort()
		return n, err
	}
	return n, rw.Close()
}

// rowWriter writes rows as Parquet (via TableWriter) or as JSONL
// objects keyed by the schema's field names; either way the file appears at
// its path only once Close has finished it.
type rowWriter struct {
	sc   *arrow.Schema
	tw   *parquetio.TableWriter
	jw   *jsonl.File
	path string
	buf  []byte
}

func newRowWriter(f Format, path string, sc *arrow.Schema) (*rowWriter, error) {
	rw := &rowWriter{sc: sc, path: path}
	if f == Parquet {
		tw, err := parquetio.CreateTable(path, sc, parquetio.WriterOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating %s: %w", path, err)
		}
		rw.tw = tw
		return rw, nil
	}
	jw, err := jsonl.CreateFile(path)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	rw.jw = jw
	return rw, nil
}

// Write writes one row; values follow the schema's fields in order. A list
// or struct column takes the values TableWriter takes (a []any per struct,
// field values in order); in JSONL a list is an array and a struct an
// object keyed by its field names, in field order.
func (rw *rowWriter) Write(row []any) error {
	if rw.tw != nil {
		return rw.tw.Append(row)
	}
	// Keys in schema order, not map order, so lines read naturally.
	b := rw.buf[:0]
	b = append(b, '{')
	var err error
	for i, f := range rw.sc.Fields() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONKey(b, f.Name)
		if b, err = appendJSON(b, f.Type, row[i]); err != nil {
			return fmt.Errorf("encoding %s: %w", f.Name, err)
		}
	}
	b = append(b, '}', '\n')
	rw.buf = b
	_, err = rw.jw.Write(b)
	return err
}

func appendJSONKey(b []byte, k string) []byte {
	kb, _ := json.Marshal(k)
	b = append(b, kb...)
	return append(b, ':')
}

// appendJSON appends v, a value of a column of type dt, as JSON: []any
// values of list and struct columns as arrays and objects, anything else as
// encoding/json writes it (without escaping HTML).
func appendJSON(b []byte, dt arrow.DataType, v any) ([]byte, error) {
	if x, ok := v.([]any); ok && x != nil {
		var err error
		switch dt.ID() {
		case arrow.LIST:
			elem := dt.(*arrow.ListType).Elem()
			b = append(b, '[')
			for i, e := range x {
				if i > 0 {
					b = append(b, ',')
				}
				if b, err = appendJSON(b, elem, e); err != nil {
					return nil, err
				}
			}
			return append(b, ']'), nil
		case arrow.STRUCT:
			st := dt.(*arrow.StructType)
			if len(x) != st.NumFields() {
				return nil, fmt.Errorf("got %d values for a struct of %d fields", len(x), st.NumFields())
			}
			b = append(b, '{')
			for i, f := range st.Fields() {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendJSONKey(b, f.Name)
				if b, err = appendJSON(b, f.Type, x[i]); err != nil {
					return nil, err
				}
			}
			return append(b, '}'), nil
		}
	}
	vb, err := marshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	return append(b, vb...), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(sb.String(), "\n")), nil
}

// Close finishes the file and moves it into place.
func (rw *rowWriter) Close() error {
	if rw.tw != nil {
		return rw.tw.Close()
	}
	return rw.jw.Close()
}

// Abort removes the partial file.
func (rw *rowWriter) Abort() {
	if rw.tw != nil {
		rw.tw.Abort()
		return
	}
	_ = rw.jw.Abort()
}
