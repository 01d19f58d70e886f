package run

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/progress"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/run/convert"
)

// Conversion is a one-pass conversion of input files into one output file,
// without a run file.
type Conversion struct {
	Files        []string
	Format       string // input format; auto sniffs each file
	MaxLineBytes int
	Filter       Filter // Dedupe needs a run and is refused
	Out          string // the output; its extension picks the format (convert.Create)
	// OnBad, when set, is called for each record that could not be read.
	OnBad func(record.Bad)
}

// Convert streams the files through the filters into the output, which
// appears only once complete. Text inputs are split on one goroutine and
// decoded on all cores; columnar inputs go through the plain reader.
// Progress meters go to progress (nil: none).
func Convert(ctx context.Context, cv Conversion, progressTo io.Writer) (convert.Stats, error) {
	var st convert.Stats
	if len(cv.Files) == 0 {
		return st, errors.New("no input files: pass one or more FILEs")
	}
	if cv.Filter.dedupes() {
		return st, errors.New("--dedupe needs a run file: use 'ac3 ingest --dedupe' then 'ac3 export'")
	}
	keep, err := cv.Filter.keep()
	if err != nil {
		return st, err
	}
	w, err := convert.Create(cv.Out)
	if err != nil {
		return st, err
	}
	if progressTo == nil {
		progressTo = io.Discard
	}
	m := progress.Start(progressTo, "convert", "conversations", 0)
	counted := countingWriter{w: w, m: m}
	text := convert.WithText(detect.Options{Format: cv.Format, MaxLineBytes: cv.MaxLineBytes})
	st, err = convert.Run(ctx, cv.Files, opener(cv.Format, cv.MaxLineBytes), keep, counted, cv.OnBad, text)
	m.Stop()
	if err != nil {
		w.Abort()
		return st, err
	}
	if err := w.Close(); err != nil {
		return st, fmt.Errorf("finishing %s: %w", cv.Out, err)
	}
	return st, nil
}

// WriteConversion prints what Convert did, as 'ac3 convert' shows it: the
// records read, the conversations written to out, and the drops and bad
// records by reason.
func WriteConversion(w io.Writer, out string, st convert.Stats) {
	var dropped, bad int64
	for _, n := range st.Dropped {
		dropped += n
	}
	badBy := map[string]int64{}
	for r, n := range st.Bad {
		bad += n
		badBy[string(r)] = n
	}
	fmt.Fprintf(w, "read %d records: wrote %d conversations to %s\n", st.Records, st.Kept, out)
	WriteCounts(w, "dropped by filters", st.Dropped, dropped)
	WriteCounts(w, "bad records skipped", badBy, bad)
}

type countingWriter struct {
	w convert.FileWriter
	m *progress.Meter
}

func (c countingWriter) Write(cv *conv.Conversation) error {
	c.m.Add(1, 0)
	return c.w.Write(cv)
}
