package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/stages/filter"
)

// sliceReader hands out recs, then err.
type sliceReader struct {
	recs []record.Record
	err  error
}

func (s *sliceReader) Next(context.Context) (record.Record, error) {
	if len(s.recs) == 0 {
		return record.Record{}, s.err
	}
	r := s.recs[0]
	s.recs = s.recs[1:]
	return r, nil
}

func (s *sliceReader) Close() error { return nil }

func TestLabelReaderKeepsOrderAndLabelsWhatItShould(t *testing.T) {
	const n = 700 // more than two batches
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		end     error
		skip    int64
		workers int
	}{
		{"to the end", io.EOF, 0, 4},
		{"an error after the records", boom, 0, 3},
		{"resumed: the first records are passed on unlabelled", io.EOF, 300, 2},
		{"one worker", io.EOF, 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &sliceReader{err: tc.end}
			for i := range n {
				if i%7 == 3 {
					src.recs = append(src.recs, record.Record{Bad: &record.Bad{Reason: record.MalformedJSON}})
					continue
				}
				src.recs = append(src.recs, record.Record{Conv: &conv.Conversation{ID: fmt.Sprint(i)}})
			}
			var labelled atomic.Int64
			owns := func(id string) bool { return !strings.HasSuffix(id, "5") }
			r := &labelReader{Reader: src, owns: owns, skip: tc.skip, workers: tc.workers,
				label: func(c *conv.Conversation) { labelled.Add(1); c.Language = "L" + c.ID }}
			var want int64
			for i := range n {
				rec, err := r.Next(context.Background())
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if i%7 == 3 {
					if rec.Bad == nil {
						t.Fatalf("record %d: %+v, want the bad record", i, rec)
					}
					continue
				}
				c := rec.Conv
				if c == nil || c.ID != fmt.Sprint(i) {
					t.Fatalf("record %d: %+v, out of order", i, rec)
				}
				shouldLabel := int64(i) >= tc.skip && owns(c.ID)
				if (c.Language != "") != shouldLabel {
					t.Errorf("record %d: language %q, labelled should be %v", i, c.Language, shouldLabel)
				}
				if shouldLabel {
					want++
				}
			}
			for range 2 {
				if _, err := r.Next(context.Background()); err != tc.end {
					t.Fatalf("after the records: %v, want %v", err, tc.end)
				}
			}
			if labelled.Load() != want {
				t.Errorf("labelled %d conversations, want %d", labelled.Load(), want)
			}
		})
	}
}

func TestLabelAheadIsUsedOnlyWhenLanguagesAreIdentified(t *testing.T) {
	english := []string{"English"}
	for _, tc := range []struct {
		f    Filter
		wrap bool
	}{
		{Filter{}, false}, // auto without a language filter identifies nothing
		{Filter{Languages: english}, true},
		{Filter{IdentifyLanguage: filter.IdentifyMissing}, true},
		{Filter{IdentifyLanguage: filter.IdentifyAlways}, true},
		{Filter{Languages: english, IdentifyLanguage: filter.IdentifyNever}, false},
	} {
		src := &sliceReader{err: io.EOF}
		_, wrapped := tc.f.labelAhead(src, 0, nil).(*labelReader)
		if wrapped != tc.wrap {
			t.Errorf("%+v: wrapped %v, want %v", tc.f, wrapped, tc.wrap)
		}
	}
}
