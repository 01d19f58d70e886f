package grade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// How an actions answer's calls were found.
const (
	ExtractedWholeCalls = "whole reply"
	ExtractedBlockCalls = "last code block holding calls"
	ExtractedListCalls  = "last call list in the text"
	ExtractedLineCalls  = "lines holding calls"
)

// maxBracketTries bounds how many '[' ExtractCalls tries as the start of
// a call list.
const maxBracketTries = 32

// ExtractCalls finds the function calls in an actions reply. It tries, in
// order: the whole reply (with a surrounding code fence or backticks
// removed, as BFCL does); each fenced block from the last; the last
// bracketed list in the text that parses as calls; and finally every line
// that on its own parses as calls. Each candidate is read as Python call
// syntax, then as JSON (a list of {"name", "arguments"} objects, OpenAI
// tool calls, or BFCL's decoded {"func": {args}} form). The error explains
// why the whole reply did not parse when nothing did.
func ExtractCalls(answer string) (calls []*Call, how string, err error) {
	whole := stripFence(answer)
	calls, firstErr := parseCallText(whole)
	if firstErr == nil {
		return calls, ExtractedWholeCalls, nil
	}
	blocks := FencedBlocks(answer)
	for i := len(blocks) - 1; i >= 0; i-- {
		if calls, err := parseCallText(blocks[i].Body); err == nil {
			return calls, ExtractedBlockCalls, nil
		}
	}
	// Only the last brackets are tried: a call list is near the end of a
	// reply, and trying every bracket of a long one would be quadratic.
	for end, tries := len(answer), 0; end > 0 && tries < maxBracketTries; tries++ {
		i := strings.LastIndexByte(answer[:end], '[')
		if i < 0 {
			break
		}
		if j := matchBracket(answer, i); j > 0 {
			if calls, err := ParsePythonCalls(answer[i : j+1]); err == nil {
				return calls, ExtractedListCalls, nil
			}
		}
		end = i
	}
	var found []*Call
	for _, line := range strings.Split(answer, "\n") {
		line = strings.Trim(strings.TrimSpace(line), "`")
		if !strings.Contains(line, "(") {
			continue
		}
		if cs, err := ParsePythonCalls(strings.TrimLeft(line, "-*• ")); err == nil {
			found = append(found, cs...)
		}
	}
	if len(found) > 0 {
		return found, ExtractedLineCalls, nil
	}
	return nil, "", firstErr
}

// stripFence removes what BFCL strips before parsing: a leading code fence
// (```python, ```json, ```tool_code, ```) or backtick and a trailing one.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	for _, p := range []string{"```tool_code", "```python", "```json", "```", "`"} {
		if strings.HasPrefix(s, p) {
			s = s[len(p):]
			break
		}
	}
	for _, p := range []string{"```", "`"} {
		if strings.HasSuffix(s, p) {
			s = s[:len(s)-len(p)]
			break
		}
	}
	return strings.TrimSpace(s)
}

// matchBracket returns the index of the bracket closing s[i], skipping
// quoted strings, or -1.
func matchBracket(s string, i int) int {
	depth := 0
	var quote byte
	for j := i; j < len(s); j++ {
		c := s[j]
		if quote != 0 {
			if c == '\\' {
				j++
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			depth--
			if depth == 0 {
				if c != ']' {
					return -1
				}
				return j
			}
		}
	}
	return -1
}

// parseCallText reads s as Python calls, else as JSON calls.
func parseCallText(s string) ([]*Call, error) {
	calls, perr := ParsePythonCalls(s)
	if perr == nil {
		return calls, nil
	}
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		if v, err := decodeOrderedJSON([]byte(t)); err == nil {
			if calls, err := callsFromJSON(v); err == nil {
				return calls, nil
			}
		}
	}
	return nil, perr
}

// callsFromJSON reads the JSON forms of calls.
func callsFromJSON(v any) ([]*Call, error) {
	switch x := v.(type) {
	case []any:
		var out []*Call
		for _, e := range x {
			cs, err := callsFromJSON(e)
			if err != nil {
				return nil, err
			}
			out = append(out, cs...)
		}
		if len(out) == 0 {
			return nil, errors.New("no function call")
		}
		return out, nil
	case *Dict:
		if tc, ok := x.Get("tool_calls"); ok {
			return callsFromJSON(tc)
		}
		c, err := callFromJSON(x)
		if err != nil {
			return nil, err
		}
		return []*Call{c}, nil
	}
	return nil, errors.New("not a call")
}

func callFromJSON(d *Dict) (*Call, error) {
	if f, ok := d.Get("function"); ok {
		if fd, ok := f.(*Dict); ok {
			return callFromJSON(fd)
		}
	}
	if n, ok := d.Get("name"); ok {
		name, ok := n.(string)
		if !ok || name == "" {
			return nil, errors.New("a call's name is not a string")
		}
		c := &Call{Name: name}
		var args any
		for _, k := range []string{"arguments", "parameters", "args", "params"} {
			if a, ok := d.Get(k); ok {
				args = a
				break
			}
		}
		if s, ok := args.(string); ok { // OpenAI sends arguments as a JSON string
			v, err := decodeOrderedJSON([]byte(s))
			if err != nil {
				return nil, fmt.Errorf("the arguments of %s are not JSON: %w", name, err)
			}
			args = v
		}
		switch a := args.(type) {
		case nil:
		case *Dict:
			for i, k := range a.Keys {
				ks, ok := k.(string)
				if !ok {
					return nil, errors.New("an argument name is not a string")
				}
				c.Args = append(c.Args, Arg{Name: ks, Value: a.Vals[i]})
			}
		default:
			return nil, fmt.Errorf("the arguments of %s are not an object", name)
		}
		return c, nil
	}
	if len(d.Keys) == 1 {
		name, _ := d.Keys[0].(string)
		if a, ok := d.Vals[0].(*Dict); ok && name != "" {
			c := &Call{Name: name}
			for i, k := range a.Keys {
				ks, _ := k.(string)
				c.Args = append(c.Args, Arg{Name: ks, Value: a.Vals[i]})
			}
			return c, nil
		}
	}
	return nil, errors.New("not a call")
}

// decodeOrderedJSON decodes one JSON value keeping object keys in order and
// numbers typed: an integer literal is an int64, anything with a fraction
// or exponent a float64 (as Python's json module reads them).
func decodeOrderedJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxPyDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		switch x {
		case '[':
			out := []any{}
			for dec.More() {
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return out, nil
		case '{':
			d := &Dict{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.Keys = append(d.Keys, k)
				d.Vals = append(d.Vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return d, nil
		}
		return nil, fmt.Errorf("unexpected %v", x)
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return f, nil
	default:
		return x, nil // string, bool, nil
	}
}

// RenderCalls writes calls in Python call syntax, as a list:
// "[f(a=1, b=[2, 3]), g(s='x')]". Values are written as Python's repr
// writes them.
func RenderCalls(calls []*Call) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, c := range calls {
		if i > 0 {
			b.WriteString(", ")
		}
		renderCall(&b, c)
	}
	b.WriteByte(']')
	return b.String()
}

func renderCall(b *strings.Builder, c *Call) {
	b.WriteString(c.Name)
	b.WriteByte('(')
	n := 0
	for _, v := range c.Positional {
		if n > 0 {
			b.WriteString(", ")
		}
		writeRepr(b, v)
		n++
	}
	for _, a := range c.Args {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Name)
		b.WriteByte('=')
		writeRepr(b, a.Value)
		n++
	}
	b.WriteByte(')')
}

// Repr writes v as Python's repr would.
func Repr(v any) string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

func writeRepr(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloat(x))
	case string:
		b.WriteString(pyString(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e)
		}
		b.WriteByte(']')
	case Tuple:
		b.WriteByte('(')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e)
		}
		if len(x) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *Dict:
		b.WriteByte('{')
		for i, k := range x.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, k)
			b.WriteString(": ")
			writeRepr(b, x.Vals[i])
		}
		b.WriteByte('}')
	case *Call:
		renderCall(b, x)
	default:
		fmt.Fprintf(b, "%v", x)
	}
}

// pyFloat formats f as Python's repr does: shortest round-trip digits,
// always with a decimal point or exponent. Infinities are written as
// literals that read back as infinities (Python's repr, "inf", would read
// back as a name).
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "1e999"
	case math.IsInf(f, -1):
		return "-1e999"
	case math.IsNaN(f):
		return "nan"
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-4 || a >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes 1e+16 like Python; Python drops no digits either.
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// pyString quotes s as Python's repr does.
func pyString(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
