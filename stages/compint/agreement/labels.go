// Package agreement measures a retention judge against people: rows of
// (constraint, compacted context, a person's YES/NO), the judge's verdict
// on each, and the agreement between them (accuracy, Cohen's κ, the 2×2
// confusion, by SC type and by compactor). CompInt's retention numbers are
// only as good as its judge; this is how a user checks a judge model before
// trusting them.
//
// The label format is the one the CompInt reference code ships for its
// blind test (judge_robustness_eval/*_labeled.jsonl, with the judge's own
// verdicts held aside in a key file), with a few more spellings accepted so
// a user's own labels fit without conversion.
package agreement

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
)

// Row is one labelled judgment.
type Row struct {
	ID string
	// Constraint is the session constraint as written; Context the
	// (compacted) context to search for it. A context given as text (the
	// reference code's compacted_summary) is one user message, the place
	// a compacted history takes in the next request.
	Constraint string
	Context    []conv.Message
	// Human is the person's answer: is the constraint still in the context?
	Human bool
	// Type is the SC type ("" when neither the row nor the key says);
	// SCID the SC's id in a set (0: none given).
	Type string
	SCID int
	// Group is what the context came from (the compactor), "" if unknown.
	Group string
	// Reference is a verdict given with the labels (the key file's
	// judge_retention); nil when none.
	Reference *bool
}

// Problem is a row that could not be used, with where and why.
type Problem struct {
	File   string
	Line   int
	Reason string
}

func (p Problem) String() string { return fmt.Sprintf("%s line %d: %s", p.File, p.Line, p.Reason) }

// wireRow is a label line. Either spelling of each field is accepted: the
// reference code's (sssc_message, compacted_summary, label) or plainer
// names (constraint, context, human).
type wireRow struct {
	ID               json.RawMessage `json:"id"`
	SSSCMessage      *string         `json:"sssc_message"`
	Constraint       *string         `json:"constraint"`
	CompactedSummary *string         `json:"compacted_summary"`
	Context          json.RawMessage `json:"context"`
	Label            json.RawMessage `json:"label"`
	Human            json.RawMessage `json:"human"`
	Type             string          `json:"type"`
	SSSCID           json.RawMessage `json:"sssc_id"`
	Compactor        string          `json:"compactor"`
	JudgeRetention   json.RawMessage `json:"judge_retention"`
}

// MaxLine is the longest label line read (a compacted 100k-token context
// is about 400 KB of text).
const MaxLine = 16 << 20

// Read yields the rows of a label file in order, or a Problem for a line
// that cannot be used (bad JSON, no id, no constraint or context, a label
// that is not yes/no). Blank lines are skipped. An error reading r ends the
// sequence with that error.
func Read(r io.Reader, file string) iter.Seq2[Row, *Problem] {
	return func(yield func(Row, *Problem) bool) {
		stopped := false
		last, err := eachLine(r, func(line int, b []byte) bool {
			row, err := parseRow(b)
			var p *Problem
			if err != nil {
				p = &Problem{File: file, Line: line, Reason: err.Error()}
			}
			stopped = !yield(row, p)
			return !stopped
		})
		if err != nil && !stopped {
			yield(Row{}, &Problem{File: file, Line: last + 1, Reason: "reading: " + err.Error()})
		}
	}
}

// eachLine calls fn with every non-blank line of r and its number until
// fn returns false. It returns the number of the last line read and the
// error that ended reading, if any (a line over MaxLine says so).
func eachLine(r io.Reader, fn func(line int, b []byte) bool) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	line := 0
	for sc.Scan() {
		line++
		if b := sc.Bytes(); len(bytes.TrimSpace(b)) > 0 && !fn(line, b) {
			return line, nil
		}
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		err = fmt.Errorf("a line is longer than %d bytes", MaxLine)
	}
	return line, err
}

func parseRow(b []byte) (Row, error) {
	var w wireRow
	if err := json.Unmarshal(b, &w); err != nil {
		return Row{}, fmt.Errorf("not a JSON object: %v", err)
	}
	var r Row
	var err error
	if r.ID, err = scalarString(w.ID); err != nil || r.ID == "" {
		return Row{}, errors.New("no id")
	}
	switch {
	case w.SSSCMessage != nil:
		r.Constraint = *w.SSSCMessage
	case w.Constraint != nil:
		r.Constraint = *w.Constraint
	}
	if strings.TrimSpace(r.Constraint) == "" {
		return Row{}, errors.New("no constraint (sssc_message or constraint)")
	}
	switch {
	case w.CompactedSummary != nil:
		if strings.TrimSpace(*w.CompactedSummary) != "" {
			r.Context = []conv.Message{{Role: conv.User, Content: *w.CompactedSummary}}
		}
	case len(w.Context) > 0:
		if r.Context, err = contextMessages(w.Context); err != nil {
			return Row{}, err
		}
	}
	if len(r.Context) == 0 {
		return Row{}, errors.New("no context (compacted_summary or context)")
	}
	raw := w.Label
	if len(raw) == 0 || string(raw) == "null" {
		raw = w.Human
	}
	h, ok := ParseLabel(raw)
	if !ok {
		if len(raw) == 0 || string(raw) == `""` || string(raw) == "null" {
			return Row{}, errors.New("not labelled yet (label is empty)")
		}
		return Row{}, fmt.Errorf("label %s is not yes or no", clip(string(raw), 40))
	}
	r.Human = h
	r.Type = strings.TrimSpace(w.Type)
	r.Group = strings.TrimSpace(w.Compactor)
	if len(w.SSSCID) > 0 && string(w.SSSCID) != "null" {
		s, err := scalarString(w.SSSCID)
		n, cerr := strconv.Atoi(s)
		if err != nil || cerr != nil || n < 0 {
			return Row{}, fmt.Errorf("sssc_id %s is not a number", clip(string(w.SSSCID), 20))
		}
		r.SCID = n
	}
	if len(w.JudgeRetention) > 0 && string(w.JudgeRetention) != "null" {
		v, ok := ParseLabel(w.JudgeRetention)
		if !ok {
			return Row{}, fmt.Errorf("judge_retention %s is not yes or no", clip(string(w.JudgeRetention), 40))
		}
		r.Reference = &v
	}
	return r, nil
}

// contextMessages reads a context given as text (one user message) or as
// chat messages ([{"role","content"}] with roles system, user, assistant).
// Empty messages are left out.
func contextMessages(raw json.RawMessage) ([]conv.Message, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		return []conv.Message{{Role: conv.User, Content: s}}, nil
	}
	var wire []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, errors.New("context is neither text nor a list of {role, content} messages")
	}
	var msgs []conv.Message
	for i, m := range wire {
		role := conv.Role(strings.ToLower(strings.TrimSpace(m.Role)))
		if role != conv.System && role != conv.User && role != conv.Assistant {
			return nil, fmt.Errorf("context message %d: role %s is not system, user or assistant", i+1, clip(strconv.Quote(m.Role), 30))
		}
		if strings.TrimSpace(m.Content) != "" {
			msgs = append(msgs, conv.Message{Role: role, Content: m.Content})
		}
	}
	return msgs, nil
}

// ParseLabel reads a yes/no answer as the reference code accepts it: true,
// yes, y, 1, present (and false, no, n, 0, absent), in any case, as a JSON
// bool, number or string.
func ParseLabel(raw json.RawMessage) (bool, bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, false
	}
	var s string
	switch x := v.(type) {
	case bool:
		return x, true
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		s = x
	default:
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "yes", "y", "true", "1", "present":
		return true, true
	case "no", "n", "false", "0", "absent":
		return false, true
	}
	return false, false
}

// scalarString reads a JSON string or number as text.
func scalarString(raw json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", errors.New("not a string or number")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Key is the held-aside part of a blind test: per row id, the verdict the
// labels are compared with and what the row came from. Rows of the label
// file take whatever they lack from it.
type Key map[string]Row

// ReadKey reads a key file (id, judge_retention, sssc_id, compactor per
// line). Lines it cannot use are Problems; the key holds the rest.
func ReadKey(r io.Reader, file string) (Key, []Problem, error) {
	k := Key{}
	var probs []Problem
	_, err := eachLine(r, func(line int, b []byte) bool {
		var w wireRow
		if err := json.Unmarshal(b, &w); err != nil {
			probs = append(probs, Problem{File: file, Line: line, Reason: fmt.Sprintf("not a JSON object: %v", err)})
			return true
		}
		id, err := scalarString(w.ID)
		if err != nil || id == "" {
			probs = append(probs, Problem{File: file, Line: line, Reason: "no id"})
			return true
		}
		row := Row{ID: id, Type: strings.TrimSpace(w.Type), Group: strings.TrimSpace(w.Compactor)}
		if len(w.SSSCID) > 0 && string(w.SSSCID) != "null" {
			s, _ := scalarString(w.SSSCID)
			if n, err := strconv.Atoi(s); err == nil && n >= 0 {
				row.SCID = n
			}
		}
		if len(w.JudgeRetention) > 0 && string(w.JudgeRetention) != "null" {
			v, ok := ParseLabel(w.JudgeRetention)
			if !ok {
				probs = append(probs, Problem{File: file, Line: line, Reason: fmt.Sprintf("judge_retention %s is not yes or no", clip(string(w.JudgeRetention), 40))})
				return true
			}
			row.Reference = &v
		}
		k[id] = row
		return true
	})
	if err != nil {
		return nil, probs, fmt.Errorf("reading key %s: %w", file, err)
	}
	return k, probs, nil
}

// Fill gives r what the key knows and r does not.
func (k Key) Fill(r Row) Row {
	kr, ok := k[r.ID]
	if !ok {
		return r
	}
	if r.Type == "" {
		r.Type = kr.Type
	}
	if r.SCID == 0 {
		r.SCID = kr.SCID
	}
	if r.Group == "" {
		r.Group = kr.Group
	}
	if r.Reference == nil {
		r.Reference = kr.Reference
	}
	return r
}
