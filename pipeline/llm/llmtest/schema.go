package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// ResponseSchema is the json_schema a request asked for in response_format.
type ResponseSchema struct {
	Name   string         `json:"name"`
	Strict bool           `json:"strict"`
	Schema map[string]any `json:"schema"`
}

// Schema returns the strict JSON schema the request sent in
// response_format, and false when it asked for none (no response_format,
// or one of another type).
func (r ChatRequest) Schema() (ResponseSchema, bool) {
	if len(r.ResponseFormat) == 0 {
		return ResponseSchema{}, false
	}
	var rf struct {
		Type       string         `json:"type"`
		JSONSchema ResponseSchema `json:"json_schema"`
	}
	if json.Unmarshal(r.ResponseFormat, &rf) != nil || rf.Type != "json_schema" {
		return ResponseSchema{}, false
	}
	return rf.JSONSchema, true
}

// JSON returns a Reply whose content is v encoded as JSON, as a server
// enforcing a schema would send it. It panics if v does not encode (a
// mistake in the test).
func JSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmtest.JSON: %v", err))
	}
	return Reply{Content: string(b)}
}

// CheckStrict reports why schema is not one a strict structured-output
// endpoint accepts, or nil. The rules are those OpenAI documents for
// strict mode, which vLLM, llama.cpp and Ollama accept too: every schema
// has a type (or an anyOf of schemas that do); every object lists all its
// properties in required and sets additionalProperties to false; arrays
// have items; enums are non-empty lists of distinct values of the
// schema's type. Errors name the path.
func CheckStrict(schema map[string]any) error {
	if schema == nil {
		return fmt.Errorf("(root): no schema")
	}
	if t, _ := schema["type"].(string); t != "object" {
		return fmt.Errorf("(root): the top level must be an object, not %v", schema["type"])
	}
	return checkStrict(schema, "(root)")
}

// knownTypes lists the JSON Schema types strict mode knows.
func knownTypes() []string {
	return []string{"object", "array", "string", "number", "integer", "boolean", "null"}
}

func checkStrict(s map[string]any, path string) error {
	if alts, ok := s["anyOf"]; ok {
		list, ok := alts.([]any)
		if !ok || len(list) == 0 {
			return fmt.Errorf("%s: anyOf must be a non-empty list", path)
		}
		for i, a := range list {
			m, ok := a.(map[string]any)
			if !ok {
				return fmt.Errorf("%s.anyOf[%d]: not a schema", path, i)
			}
			if err := checkStrict(m, fmt.Sprintf("%s.anyOf[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	t, ok := s["type"].(string)
	if !ok || !slices.Contains(knownTypes(), t) {
		return fmt.Errorf("%s: type %v is not one of %v", path, s["type"], knownTypes())
	}
	if e, ok := s["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return fmt.Errorf("%s: enum must be a non-empty list", path)
		}
		seen := map[string]bool{}
		for _, v := range list {
			if err := conforms(map[string]any{"type": t}, v, path+".enum"); err != nil {
				return err
			}
			k := fmt.Sprint(v)
			if seen[k] {
				return fmt.Errorf("%s: enum lists %v twice", path, v)
			}
			seen[k] = true
		}
	}
	switch t {
	case "object":
		props, _ := s["properties"].(map[string]any)
		if s["additionalProperties"] != false {
			return fmt.Errorf("%s: additionalProperties must be false", path)
		}
		req := map[string]bool{}
		list, _ := s["required"].([]any)
		for _, r := range list {
			name, _ := r.(string)
			if _, ok := props[name]; !ok {
				return fmt.Errorf("%s: required names %v, which is not a property", path, r)
			}
			req[name] = true
		}
		for _, name := range sortedNames(props) {
			if !req[name] {
				return fmt.Errorf("%s.%s: every property must be required (make an optional one nullable)", path, name)
			}
			m, ok := props[name].(map[string]any)
			if !ok {
				return fmt.Errorf("%s.%s: not a schema", path, name)
			}
			if err := checkStrict(m, path+"."+name); err != nil {
				return err
			}
		}
	case "array":
		items, ok := s["items"].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: an array needs items", path)
		}
		return checkStrict(items, path+"[]")
	}
	return nil
}

// Conforms reports why the JSON text doc does not match schema, or nil.
// It understands the subset CheckStrict allows.
func Conforms(schema map[string]any, doc string) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("(root): not JSON: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("(root): text after the JSON value")
	}
	return conforms(schema, v, "(root)")
}

func conforms(s map[string]any, v any, path string) error {
	if alts, ok := s["anyOf"].([]any); ok {
		var first error
		for _, a := range alts {
			m, _ := a.(map[string]any)
			err := conforms(m, v, path)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		return first
	}
	t, _ := s["type"].(string)
	ok := false
	switch t {
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	case "string":
		_, ok = v.(string)
	case "number":
		ok = isNumber(v, false)
	case "integer":
		ok = isNumber(v, true)
	case "boolean":
		_, ok = v.(bool)
	case "null":
		ok = v == nil
	}
	if !ok {
		return fmt.Errorf("%s: %s is not of type %s", path, short(v), t)
	}
	if e, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(e, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
			return fmt.Errorf("%s: %s is not in the enum %v", path, short(v), e)
		}
	}
	switch t {
	case "object":
		obj := v.(map[string]any)
		props, _ := s["properties"].(map[string]any)
		list, _ := s["required"].([]any)
		for _, r := range list {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s.%s: required", path, r)
			}
		}
		for _, k := range sortedNames(obj) {
			p, ok := props[k].(map[string]any)
			if !ok {
				if s["additionalProperties"] == false {
					return fmt.Errorf("%s.%s: not a property of the schema", path, k)
				}
				continue
			}
			if err := conforms(p, obj[k], path+"."+k); err != nil {
				return err
			}
		}
	case "array":
		items, _ := s["items"].(map[string]any)
		for i, x := range v.([]any) {
			if err := conforms(items, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func isNumber(v any, integer bool) bool {
	switch n := v.(type) {
	case json.Number:
		if !integer {
			return true
		}
		_, err := n.Int64()
		return err == nil
	case float64:
		return !integer || n == float64(int64(n))
	}
	return false
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
