package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ErrNoJSON is returned by JSON when an answer holds no JSON object.
var ErrNoJSON = errors.New("no JSON object in answer")

// FieldError reports a field that failed validation, by its JSON path.
type FieldError struct {
	Path   string // e.g. "refs[2].kind"
	Reason string // e.g. "required", `"maybe" is not one of new_ask|feedback`
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Reason }

// JSON finds the JSON object in a model answer, decodes it into dst (a pointer
// to a struct) and validates it against dst's `parse` struct tags.
//
// Finding: reasoning traces are removed (SplitThink); then, in order, the
// contents of ```json (or bare ```) fences, the whole trimmed answer, and
// every balanced {…} span in the text are tried, and the first candidate that
// decodes into dst and validates is used. Prose before and after the object is
// ignored.
//
// Validation reads the tag `parse:"required,enum=a|b|c"` on struct fields:
// required means the key must be present and not null; enum limits a string
// (or each string of a []string) to the listed values. (A third option,
// type=number, only changes the field's type in Schema, for fields decoded
// loosely such as a json.RawMessage.) Nested structs and
// slices of structs are checked too. Unknown keys are ignored.
//
// JSON returns ErrNoJSON when no candidate is a JSON object, or the
// *FieldError or decoding error of the best candidate otherwise.
func JSON(text string, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("decoding JSON answer: dst must be a non-nil pointer")
	}
	text, _ = SplitThink(text)
	var firstErr error
	for _, c := range jsonCandidates(text) {
		if len(c) == 0 || c[0] != '{' {
			continue
		}
		fresh := reflect.New(rv.Elem().Type())
		if err := json.Unmarshal(c, fresh.Interface()); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("decoding JSON answer: %w", err)
			}
			continue
		}
		if err := validate(c, fresh.Elem(), ""); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		rv.Elem().Set(fresh.Elem())
		return nil
	}
	if firstErr != nil {
		return firstErr
	}
	return ErrNoJSON
}

// jsonCandidates lists the substrings of text that might be the answer's
// JSON object, most likely first.
func jsonCandidates(text string) [][]byte {
	var out [][]byte
	rest := text
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		body := rest[i+3:]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[") {
			body = body[nl+1:] // drop the info string, e.g. "json"
		}
		j := strings.Index(body, "```")
		if j < 0 {
			out = append(out, []byte(strings.TrimSpace(body)))
			break
		}
		out = append(out, []byte(strings.TrimSpace(body[:j])))
		rest = body[j+3:]
	}
	out = append(out, []byte(strings.TrimSpace(text)))
	b := []byte(text)
	for i := 0; i < len(b); i++ {
		if b[i] != '{' {
			continue
		}
		if end := balanced(b[i:]); end > 0 {
			out = append(out, b[i:i+end])
		}
	}
	return out
}

// balanced returns the length of the balanced {…} span at the start of b,
// skipping braces inside JSON strings, or 0 if it never closes.
func balanced(b []byte) int {
	depth, inStr, esc := 0, false, false
	for i, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}

type fieldRule struct {
	required bool
	enum     []string
	typ      string // JSON Schema type that overrides the Go type's (type=number)
}

func rulesOf(f reflect.StructField) fieldRule {
	var r fieldRule
	for _, part := range strings.Split(f.Tag.Get("parse"), ",") {
		switch {
		case part == "required":
			r.required = true
		case strings.HasPrefix(part, "enum="):
			r.enum = strings.Split(strings.TrimPrefix(part, "enum="), "|")
		case strings.HasPrefix(part, "type="):
			r.typ = strings.TrimPrefix(part, "type=")
		}
	}
	return r
}

// jsonName returns the key a field decodes from, or "" if it is skipped.
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name
}

// validate checks v (already decoded from raw) against its parse tags.
func validate(raw []byte, v reflect.Value, path string) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return &FieldError{Path: orRoot(path), Reason: "not an object"}
		}
		keys := make(map[string]json.RawMessage, len(obj))
		for k, val := range obj {
			keys[strings.ToLower(k)] = val // encoding/json matches keys case-insensitively
		}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name := jsonName(f)
			if name == "" {
				continue
			}
			p := join(path, name)
			val, ok := keys[strings.ToLower(name)]
			present := ok && !bytes.Equal(bytes.TrimSpace(val), []byte("null"))
			r := rulesOf(f)
			if r.required && !present {
				return &FieldError{Path: p, Reason: "required"}
			}
			if !present {
				continue
			}
			if len(r.enum) > 0 {
				if err := checkEnum(v.Field(i), r.enum, p); err != nil {
					return err
				}
			}
			if err := validate(val, v.Field(i), p); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil // decoded from something else ([]byte from a string); nothing to check
		}
		for i := 0; i < v.Len() && i < len(items); i++ {
			if err := validate(items[i], v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkEnum(v reflect.Value, enum []string, path string) error {
	check := func(s string, p string) error {
		for _, e := range enum {
			if s == e {
				return nil
			}
		}
		return &FieldError{Path: p, Reason: fmt.Sprintf("%q is not one of %s", s, strings.Join(enum, "|"))}
	}
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return check(v.String(), path)
	case reflect.Slice:
		for i := range v.Len() {
			if v.Index(i).Kind() == reflect.String {
				if err := check(v.Index(i).String(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// Schema returns a JSON Schema for the struct type of v (a struct or a pointer
// to one) that matches what JSON validates: object properties named by json
// tags, `required` from parse:"required", enums from parse:"enum=…". It
// follows the subset that strict structured-output endpoints accept: every
// object lists all its properties as required and forbids others, and fields
// that are optional for JSON are allowed to be null instead.
func Schema(v any) map[string]any {
	t := reflect.TypeOf(v)
	return schemaOf(t)
}

func schemaOf(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		props := map[string]any{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name := jsonName(f)
			if name == "" {
				continue
			}
			s := schemaOf(f.Type)
			r := rulesOf(f)
			if r.typ != "" {
				s = map[string]any{"type": r.typ}
			}
			if len(r.enum) > 0 {
				if s["type"] == "array" {
					s["items"] = map[string]any{"type": "string", "enum": r.enum}
				} else {
					s["enum"] = r.enum
				}
			}
			if !r.required {
				s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
			}
			props[name] = s
			names = append(names, name)
		}
		return map[string]any{"type": "object", "properties": props, "required": names, "additionalProperties": false}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}
