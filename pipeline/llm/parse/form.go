package parse

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Output says how a prompt asks a model to lay out its answer.
type Output string

// The two layouts. Tags works with any server: the prompt shows
// nonce-tagged sections and the parser reads them out of free text. With
// JSONSchema the request carries a strict JSON schema (response_format)
// that servers such as OpenAI, vLLM, llama.cpp and Ollama enforce while
// decoding, and the whole answer is one JSON object.
const (
	Tags       Output = "tags"
	JSONSchema Output = "json_schema"
)

// ParseOutput reads an output name; "" is Tags.
func ParseOutput(s string) (Output, error) {
	switch o := Output(strings.TrimSpace(s)); o {
	case "", Tags:
		return Tags, nil
	case JSONSchema:
		return o, nil
	}
	return "", fmt.Errorf("output %q: valid: %s, %s", s, Tags, JSONSchema)
}

// Field is one text field of a Sections answer.
type Field struct {
	// Name is the section's tag name and the JSON key.
	Name string
	// Hint is the placeholder the prompt shows where the field's text goes,
	// e.g. "...the specification...".
	Hint string
	// Optional fields may be left out (tags) or null (JSON).
	Optional bool
	// Enum, when set, lists the only values the field may hold (after
	// trimming space).
	Enum []string
}

// Sections is an answer made of named text fields, declared once: the tag
// layout and the tag parser, the JSON schema and the JSON parser all come
// from the same list, so the two outputs cannot ask for different fields.
// Both parsers return the fields by name, trimmed.
type Sections struct {
	Name   string // schema name sent with the request, e.g. "spec"
	Fields []Field
}

// Schema returns the strict JSON schema of the answer: an object with one
// string property per field, every property listed as required, no other
// properties; an optional field may be null, an enumerated one is limited
// to its values.
func (s Sections) Schema() map[string]any {
	props := map[string]any{}
	names := make([]string, 0, len(s.Fields))
	for _, f := range s.Fields {
		p := map[string]any{"type": "string"}
		if len(f.Enum) > 0 {
			p["enum"] = append([]string(nil), f.Enum...)
		}
		if f.Optional {
			p = map[string]any{"anyOf": []any{p, map[string]any{"type": "null"}}}
		}
		props[f.Name] = p
		names = append(names, f.Name)
	}
	return map[string]any{"type": "object", "properties": props, "required": names, "additionalProperties": false}
}

// Layout is what the prompt shows the model as the form of its answer: with
// Tags each field's opening tag (with tg's nonce), hint and closing tag, one
// field after the other; with JSONSchema one JSON object whose values are
// the hints.
func (s Sections) Layout(out Output, tg Tagger) string {
	var b strings.Builder
	if out == JSONSchema {
		b.WriteString("{")
		for i, f := range s.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			k, _ := json.Marshal(f.Name)
			v, _ := json.Marshal(f.Hint)
			b.Write(k)
			b.WriteString(": ")
			b.Write(v)
		}
		b.WriteString("}")
		return b.String()
	}
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(tg.Open(f.Name) + "\n" + f.Hint + "\n" + tg.Close(f.Name))
	}
	return b.String()
}

// Parse reads the fields from an answer laid out as out. With Tags only
// sections whose tag carries tg's nonce count (see Tagger.Parse); with
// JSONSchema the whole answer must be one JSON object with no other keys
// (see Strict). Required fields must be present and not null; enumerated
// fields must hold one of their values. Absent optional fields are left out
// of the map. Errors: *MissingError, *FieldError, ErrNoJSON or a decoding
// error.
func (s Sections) Parse(out Output, tg Tagger, text string) (map[string]string, error) {
	if out == JSONSchema {
		return s.parseJSON(text)
	}
	var req, opt []string
	for _, f := range s.Fields {
		if f.Optional {
			opt = append(opt, f.Name)
		} else {
			req = append(req, f.Name)
		}
	}
	got, err := tg.Parse(text, req, opt...)
	if err != nil {
		return got, err
	}
	return got, s.checkEnums(got)
}

func (s Sections) parseJSON(text string) (map[string]string, error) {
	body, err := strictBody(text)
	if err != nil {
		return nil, err
	}
	var obj map[string]*string
	if err := decodeOnly(body, &obj); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	got := map[string]string{}
	for _, f := range s.Fields {
		known[f.Name] = true
		v, ok := obj[f.Name]
		if !ok || v == nil {
			if !f.Optional {
				return nil, &FieldError{Path: f.Name, Reason: "required"}
			}
			continue
		}
		got[f.Name] = strings.TrimSpace(*v)
	}
	for k := range obj {
		if !known[k] {
			return nil, &FieldError{Path: k, Reason: "not a field of the answer"}
		}
	}
	return got, s.checkEnums(got)
}

func (s Sections) checkEnums(got map[string]string) error {
	for _, f := range s.Fields {
		v, ok := got[f.Name]
		if !ok || len(f.Enum) == 0 {
			continue
		}
		if !contains(f.Enum, v) {
			return &FieldError{Path: f.Name, Reason: fmt.Sprintf("%q is not one of %s", clipValue(v), strings.Join(f.Enum, "|"))}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func clipValue(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Object is an answer that is one JSON object, a W, declared once by W's
// struct tags: `json` names the keys, `parse:"required,enum=a|b"` adds the
// checks (see JSON) and `hint:"…"` is the text the prompt shows as the
// key's value in the example (raw, so a string hint carries its quotes; an
// enumerated field without a hint shows its values joined by " | ").
//
// With Tags the object goes inside one nonce-tagged section named Section
// and is read with JSON, which tolerates prose and fences inside the
// section; with JSONSchema it is the whole answer, under W's strict schema,
// and is read with Strict.
type Object[W any] struct {
	Name    string // schema name sent with the request
	Section string // the tag of the section holding the object (Tags)
}

// Schema returns W's strict JSON schema (see Schema).
func (o Object[W]) Schema() map[string]any {
	var w W
	return Schema(w)
}

// Example returns W's example object, as the prompt shows it.
func (o Object[W]) Example() string {
	var w W
	return Example(w)
}

// Layout is what the prompt shows the model as the form of its answer: the
// example object, inside the tagged section with Tags.
func (o Object[W]) Layout(out Output, tg Tagger) string {
	if out == JSONSchema {
		return o.Example()
	}
	return tg.Wrap(o.Section, o.Example())
}

// Parse reads a W from an answer laid out as out.
func (o Object[W]) Parse(out Output, tg Tagger, text string) (W, error) {
	var w W
	if out == JSONSchema {
		err := Strict(text, &w)
		return w, err
	}
	sec, err := tg.Parse(text, []string{o.Section})
	if err != nil {
		return w, err
	}
	err = JSON(sec[o.Section], &w)
	return w, err
}

// Strict decodes an answer given under a strict JSON schema into dst (a
// pointer to a struct) and validates it like JSON. It is the parser for
// structured output, where the server makes the whole answer one object:
// after reasoning traces are removed (SplitThink) the answer must be exactly
// one JSON object (one code fence around it is tolerated), with no text
// before or after it and no key that dst does not declare. Unlike JSON it
// never searches the text for an object, so an object quoted inside a field,
// or echoed from the prompt next to the answer, is never taken for it.
//
// Errors: ErrNoJSON when the answer is not an object, *FieldError for a
// missing or invalid field, or a decoding error.
func Strict(text string, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("decoding JSON answer: dst must be a non-nil pointer")
	}
	body, err := strictBody(text)
	if err != nil {
		return err
	}
	fresh := reflect.New(rv.Elem().Type())
	if err := decodeOnly(body, fresh.Interface()); err != nil {
		return err
	}
	if err := validate(body, fresh.Elem(), ""); err != nil {
		return err
	}
	rv.Elem().Set(fresh.Elem())
	return nil
}

// strictBody returns the answer's object text: the trimmed answer without
// its reasoning, unwrapped from one code fence that encloses all of it.
func strictBody(text string) ([]byte, error) {
	text, _ = SplitThink(text)
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "```") && strings.HasSuffix(text, "```") && len(text) >= 6 {
		inner := text[3 : len(text)-3]
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{[") {
			inner = inner[nl+1:]
		}
		text = strings.TrimSpace(inner)
	}
	if !strings.HasPrefix(text, "{") {
		return nil, ErrNoJSON
	}
	return []byte(text), nil
}

// decodeOnly decodes b into dst, refusing unknown keys (for structs) and
// anything after the first value.
func decodeOnly(b []byte, dst any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("decoding JSON answer: %w", err)
	}
	if dec.More() {
		return errors.New("decoding JSON answer: text after the object")
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("decoding JSON answer: text after the object")
	}
	return nil
}

// Example renders the example object of v's struct type (a struct or a
// pointer to one) from its `hint` and `parse` struct tags, keys in field
// order: {"type": "new_ask | feedback", "confidence": 0.0 to 1.0}. A field
// without a hint shows "..." (an enumeration: its values), a nested struct
// its own example, a slice of structs a list of one example.
func Example(v any) string {
	return exampleOf(reflect.TypeOf(v))
}

func exampleOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return `"..."`
	}
	var b strings.Builder
	b.WriteString("{")
	n := 0
	for i := range t.NumField() {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" {
			continue
		}
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteString(": ")
		b.WriteString(fieldExample(f))
	}
	b.WriteString("}")
	return b.String()
}

func fieldExample(f reflect.StructField) string {
	if h, ok := f.Tag.Lookup("hint"); ok {
		return h
	}
	if r := rulesOf(f); len(r.enum) > 0 {
		s, _ := json.Marshal(strings.Join(r.enum, " | "))
		return string(s)
	}
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	switch ft.Kind() {
	case reflect.Struct:
		return exampleOf(ft)
	case reflect.Slice, reflect.Array:
		if e := ft.Elem(); e.Kind() == reflect.Struct || (e.Kind() == reflect.Pointer && e.Elem().Kind() == reflect.Struct) {
			return "[" + exampleOf(e) + "]"
		}
		return "[]"
	}
	return `"..."`
}

// Answer binds a Sections form to the output a model uses and to the tagger
// of one prompt, for templates and callers: a template writes
// {{if .T.JSON}}…{{else}}…{{end}} for wording that differs and {{.T.Layout}}
// for the form itself; the caller sends Form.Schema() when JSON() and reads
// the answer with Parse.
type Answer struct {
	Form   Sections
	Output Output
	Tagger Tagger
}

// JSON reports whether the answer is one JSON object (Output is JSONSchema).
func (a Answer) JSON() bool { return a.Output == JSONSchema }

// Layout is Form.Layout for this output and tagger.
func (a Answer) Layout() string { return a.Form.Layout(a.Output, a.Tagger) }

// Open is the tagger's opening tag of section name (for templates that write
// a tag themselves).
func (a Answer) Open(name string) string { return a.Tagger.Open(name) }

// Close is the closing tag of section name.
func (a Answer) Close(name string) string { return a.Tagger.Close(name) }

// Parse is Form.Parse for this output and tagger.
func (a Answer) Parse(text string) (map[string]string, error) {
	return a.Form.Parse(a.Output, a.Tagger, text)
}
