// Package export writes what a run holds to files other tools read: the kept
// conversations (canonical Parquet or JSONL), the curated contexts of every
// strategy (one row per conversation, turn and strategy, with the context as
// a list of messages), and the quarantine. Rows come out in ingest order, then
// turn, then strategy, so an export is the same bytes however the work that
// produced it was scheduled or interrupted.
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

// The output formats. SFT is OpenAI chat fine-tuning JSONL and applies to
// curated contexts only.
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
	rw, err := newRowWriter(f, path, sc)
	if err != nil {
		return 0, err
	}
	var n int64
	err = l.Quarantine(ctx, func(q ledger.Quarantined) error {
		n++
		return rw.Write([]any{q.Input, q.Source.File, q.Source.Line, q.Source.Row, string(q.Reason), q.Detail, q.Excerpt})
	})
	if err != nil {
		rw.Abort()
		return n, err
	}
	return n, rw.Close()
}

// rowWriter writes flat rows as Parquet (via TableWriter) or as JSONL
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

// Write writes one row; values follow the schema's fields in order.
func (rw *rowWriter) Write(row []any) error {
	if rw.tw != nil {
		return rw.tw.Append(row)
	}
	obj := make(map[string]any, len(row))
	keys := make([]string, len(row))
	for i, f := range rw.sc.Fields() {
		obj[f.Name] = row[i]
		keys[i] = f.Name
	}
	// Keys in schema order, not map order, so lines read naturally.
	b := rw.buf[:0]
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(b, kb...)
		b = append(b, ':')
		vb, err := marshalNoEscape(obj[k])
		if err != nil {
			return fmt.Errorf("encoding %s: %w", k, err)
		}
		b = append(b, vb...)
	}
	b = append(b, '}', '\n')
	rw.buf = b
	_, err := rw.jw.Write(b)
	return err
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
