package grade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The LiC task names this package grades.
const (
	TaskMath     = "math"
	TaskDatabase = "database"
	TaskActions  = "actions"
	TaskCode     = "code"
)

// Tasks are the task names, in the order LiC lists them.
func Tasks() []string { return []string{TaskCode, TaskDatabase, TaskActions, TaskMath} }

// Instance holds the fields of one LiC record that grading needs, under the
// names LiC's released files use. Fields a task does not use stay empty.
//
// A few LiC fields hold JSON inside a string (schema_tables,
// public_test_cases); JSONText takes either that or the JSON value itself,
// so a file that stores them unquoted reads the same.
type Instance struct {
	TaskID string `json:"task_id"`
	Task   string `json:"task"`

	// math (GSM8K): the reference solution ends with "#### <answer>".
	Question string `json:"question,omitempty"`
	Answer   string `json:"answer,omitempty"`

	// database (Spider) and actions (BFCL): the single-turn question the
	// shards were cut from (actions store it as BFCL's chat turns).
	FullySpecifiedQuestion QuestionText `json:"fully_specified_question,omitempty"`

	// database (Spider).
	DBID         string   `json:"db_id,omitempty"`
	ReferenceSQL string   `json:"reference_sql,omitempty"`
	SchemaSQL    string   `json:"schema_sql,omitempty"`
	SchemaTables JSONText `json:"schema_tables,omitempty"`

	// actions (BFCL): the function documentation and, per expected call, the
	// allowed values of each argument.
	Function        json.RawMessage `json:"function,omitempty"`
	ReferenceAnswer json.RawMessage `json:"reference_answer,omitempty"`
	TestCategory    string          `json:"test_category,omitempty"`
	Language        string          `json:"language,omitempty"`

	// code (HumanEval, LiveCodeBench).
	Prompt           string   `json:"prompt,omitempty"`
	Test             string   `json:"test,omitempty"`
	EntryPoint       string   `json:"entry_point,omitempty"`
	PublicTestCases  JSONText `json:"public_test_cases,omitempty"`
	PrivateTestCases string   `json:"private_test_cases,omitempty"`
	Metadata         struct {
		FuncName string `json:"func_name,omitempty"`
	} `json:"metadata"`
	Source string `json:"source,omitempty"`
}

// ParseInstance reads one LiC record (or the Meta a reader kept of it: every
// field but the shards) as an Instance.
func ParseInstance(raw []byte) (*Instance, error) {
	var in Instance
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("reading LiC instance: %w", err)
	}
	return &in, nil
}

// FuncName is the name the code task's tests call: metadata.func_name, else
// HumanEval's entry_point.
func (in *Instance) FuncName() string {
	if in.Metadata.FuncName != "" {
		return in.Metadata.FuncName
	}
	return in.EntryPoint
}

// QuestionText is a task's single-turn question: a string (database), or
// BFCL's chat turns (actions: a list of turns, each a list of {role,
// content} messages, or the messages alone), of which it keeps the user
// messages' contents joined by blank lines. Any other shape reads as empty,
// so a record is never refused for it.
type QuestionText string

// UnmarshalJSON reads a string or chat turns, as QuestionText says.
func (q *QuestionText) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*q = QuestionText(s)
		return nil
	}
	var parts []string
	var walk func(raw json.RawMessage, depth int)
	walk = func(raw json.RawMessage, depth int) {
		var m struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		var list []json.RawMessage
		switch {
		case depth > 3:
		case json.Unmarshal(raw, &list) == nil:
			for _, x := range list {
				walk(x, depth+1)
			}
		case json.Unmarshal(raw, &m) == nil && m.Role == "user" && strings.TrimSpace(m.Content) != "":
			parts = append(parts, m.Content)
		}
	}
	walk(b, 0)
	*q = QuestionText(strings.Join(parts, "\n\n"))
	return nil
}

// JSONText is a JSON value that LiC may store either as itself or encoded in
// a string. It holds the decoded JSON text; empty means absent or null.
type JSONText []byte

// UnmarshalJSON accepts a string (whose content is kept as the JSON text) or
// any other JSON value (kept as it is).
func (t *JSONText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = JSONText(s)
	default:
		*t = append(JSONText(nil), b...)
	}
	return nil
}

// MarshalJSON writes the text back as a JSON string, the form LiC uses.
func (t JSONText) MarshalJSON() ([]byte, error) {
	if len(t) == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(string(t))
}

// ErrBadInstance marks an InstanceError: the record lacks what grading needs
// (no reference answer, a reference that does not parse). It is a problem of
// the data, not of the answer being graded.
var ErrBadInstance = errors.New("LiC instance cannot be graded")

// InstanceError says which instance is unusable and why.
type InstanceError struct {
	TaskID string
	Reason string
}

func (e *InstanceError) Error() string {
	return fmt.Sprintf("grading %s: %s", e.TaskID, e.Reason)
}

// Unwrap lets errors.Is(err, ErrBadInstance) find it.
func (e *InstanceError) Unwrap() error { return ErrBadInstance }

func badInstance(in *Instance, format string, args ...any) error {
	return &InstanceError{TaskID: in.TaskID, Reason: fmt.Sprintf(format, args...)}
}
