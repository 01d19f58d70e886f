package config

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ac3/ac3/pipeline/spell"
)

// decode decodes n into v strictly: a key v has no setting for is an error
// naming its path, line and the keys that are known there, and a value of
// the wrong kind is described in the file's terms, not Go's. A yaml.Node's
// own Decode drops unknown keys silently, and a misspelt setting (ordr:
// both) would run the default without a word.
func decode(n *yaml.Node, v any, path string) error {
	if err := unknownKeys(n, reflect.TypeOf(v), path); err != nil {
		return err
	}
	if err := n.Decode(v); err != nil {
		return explain(err, n, reflect.TypeOf(v), path)
	}
	return nil
}

// unknownKeys walks n beside the Go type it will be decoded into and
// reports the first key with no field, in file order. Values of the wrong
// kind are left to the decoder, which reports them.
func unknownKeys(n *yaml.Node, t reflect.Type, path string) error {
	if n == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case reflect.PointerTo(t).Implements(unmarshaler):
		return nil // the type reads itself
	case n.Kind == yaml.AliasNode:
		return unknownKeys(n.Alias, t, path)
	case t == reflect.TypeOf(yaml.Node{}) || t.Kind() == reflect.Interface:
		return nil // read later, by code that checks it itself
	}
	var fields map[string]reflect.Type
	var open reflect.Type // an inline map's values: it takes any other key
	if n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct {
		fields, open = yamlFields(t)
	}
	for c := range children(n, path) {
		ct := t // a document's content
		switch {
		case n.Kind == yaml.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array),
			n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
			ct = t.Elem()
		case fields != nil:
			if c.key.Kind == yaml.ScalarNode && c.key.Value == "<<" {
				continue // a merge key: its mapping is checked where it is defined
			}
			ft, ok := fields[c.key.Value]
			switch {
			case ok:
				ct = ft
			case open != nil:
				ct = open
			default:
				known := slices.Sorted(maps.Keys(fields))
				msg := fmt.Sprintf("line %d: %s: unknown setting (known: %s)", c.key.Line, c.path, strings.Join(known, ", "))
				if s := spell.Nearest(c.key.Value, known); s != "" {
					msg += "; did you mean " + s + "?"
				}
				return errors.New(msg)
			}
		case n.Kind != yaml.DocumentNode:
			return nil
		}
		if err := unknownKeys(c.node, ct, c.path); err != nil {
			return err
		}
	}
	return nil
}

var unmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// yamlFields lists the keys a struct reads, with the type of each, as
// yaml.v3 names them (the tag, else the lowercased field name; inline
// structs merged in). open is the element type of an inline map, which
// takes every other key (nil when there is none).
func yamlFields(t reflect.Type) (fields map[string]reflect.Type, open reflect.Type) {
	fields = map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Map:
				open = ft.Elem()
			case reflect.Struct:
				inner, innerOpen := yamlFields(ft)
				for k, v := range inner {
					fields[k] = v
				}
				if innerOpen != nil {
					open = innerOpen
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields, open
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// The decoder's words for a value of the wrong kind: "line 6: cannot
// unmarshal !!str `x` into int".
var typeErr = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")

// explain rewrites the decoder's type errors in the file's terms: the
// line, the setting's path, what was there and what the setting takes.
func explain(err error, n *yaml.Node, t reflect.Type, path string) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		if path == "" {
			return err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	types := map[string]reflect.Type{}
	goTypes(t, types)
	lines := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		m := typeErr.FindStringSubmatch(e)
		if m == nil {
			lines = append(lines, e)
			continue
		}
		got := m[3]
		switch {
		case m[2] == "seq":
			got = "a list"
		case m[2] == "map":
			got = "a section of settings"
		case got == "":
			got = "an empty value"
		default:
			got = "`" + got + "`"
		}
		where := path
		if line, err := strconv.Atoi(m[1]); err == nil {
			if k, ok := keyAt(n, line, "!!"+m[2], m[3], path); ok {
				where = k
			}
		}
		if where != "" {
			where += ": "
		}
		lines = append(lines, fmt.Sprintf("line %s: %s%s where %s is expected", m[1], where, got, describe(m[4], types)))
	}
	return errors.New(strings.Join(lines, "; "))
}

// keyAt finds the setting whose value sits at line with the given tag (and
// text, for a scalar): the path the decoder's message does not give.
func keyAt(n *yaml.Node, line int, tag, value, path string) (string, bool) {
	if n == nil {
		return "", false
	}
	if path != "" && n.Line == line && n.ShortTag() == tag && (n.Kind != yaml.ScalarNode || n.Value == value) {
		return path, true
	}
	for c := range children(n, path) {
		if k, ok := keyAt(c.node, line, tag, value, c.path); ok {
			return k, true
		}
	}
	return "", false
}

// child is a value under a node, with its key (nil in a sequence or a
// document) and its path.
type child struct {
	key, node *yaml.Node
	path      string
}

// children yields the values under n.
func children(n *yaml.Node, path string) iter.Seq[child] {
	return func(yield func(child) bool) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if !yield(child{node: c, path: path}) {
					return
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if !yield(child{key: k, node: n.Content[i+1], path: join(path, k.Value)}) {
					return
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if !yield(child{node: c, path: fmt.Sprintf("%s[%d]", path, i)}) {
					return
				}
			}
		}
	}
}

// goTypes indexes the types reachable from t by the name the decoder
// prints for them.
func goTypes(t reflect.Type, seen map[string]reflect.Type) {
	if _, ok := seen[t.String()]; ok {
		return
	}
	seen[t.String()] = t
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		goTypes(t.Elem(), seen)
	case reflect.Map:
		goTypes(t.Key(), seen)
		goTypes(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				goTypes(t.Field(i).Type, seen)
			}
		}
	}
}

// describe names what a Go type takes in YAML.
func describe(goType string, types map[string]reflect.Type) string {
	t, ok := types[goType]
	if !ok {
		return goType
	}
	if t == reflect.TypeOf(time.Duration(0)) {
		return "a duration (such as 90s or 2m)"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a single value"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a section of settings (key: value)"
	}
	return goType
}
