package jsonl

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// stdVerdict is what encoding/json says about b: valid, truncated or neither.
// encoding/json reports input that ends inside a number or literal as an
// invalid ' ' at the very end (it feeds its scanner a space at EOF); the
// Cursor calls that truncated, which is what it is.
func stdVerdict(b []byte) (valid, truncated bool) {
	// Validity is syntax only: "1e700" is valid JSON even though it does
	// not fit a float64, which Unmarshal into any would report.
	if json.Valid(b) {
		return true, false
	}
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	atEnd := errors.As(err, &se) && se.Offset == int64(len(b)) && len(b) > 0 && b[len(b)-1] != ' ' && strings.Contains(err.Error(), "invalid character ' '")
	return false, atEnd || strings.Contains(err.Error(), "unexpected end of JSON input")
}

// tree rebuilds the value at c as encoding/json would decode it with
// UseNumber, to compare the two parsers.
func tree(c *Cursor) (any, error) {
	switch c.Kind() {
	case KindObject:
		m := map[string]any{}
		err := c.Object(func(key []byte, _ int) error {
			v, err := tree(c)
			m[string(key)] = v
			return err
		})
		return m, err
	case KindArray:
		a := []any{}
		err := c.Array(func(int) error {
			v, err := tree(c)
			a = append(a, v)
			return err
		})
		return a, err
	case KindString:
		return c.Str()
	case KindNumber:
		raw, err := c.Raw()
		return json.Number(raw), err
	case KindBool:
		return c.Bool()
	case KindNull:
		return nil, c.Null()
	}
	return nil, c.Skip()
}

func stdTree(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(err)
	}
	return v
}

var cursorSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"x\ny"}`, `"\ud83d\ude00"`, `"\ud800x"`,
	`"\ud800\u0041"`, `-0.5e+10`, `01`, `1.`, `-`, `tru`, `trux`, `{"a":1,}`, `[1,]`, `{"a" 1}`,
	`"a\u12"`, `"a\u12g"`, `"tab	in string"`, `{"k\"ey":"v\\"}`, ` [ true , false , null ] `,
	`{"conversation":[{"role":"user","content":"hi"}]}`, `[[[[[]]]]]`, `"\/\b\f\r\t"`, `{"a":1}{`,
	`{"a":"é∩😀"}`, `1e5`, `1E-2`, `1e700`, `-1e-700`, `0.0`, `-01`, `[`, `{"a":`, `{"a"`,
}

func TestCursorMatchesEncodingJSON(t *testing.T) {
	for _, s := range cursorSeeds {
		checkCursor(t, []byte(s))
	}
}

func FuzzCursor(f *testing.F) {
	for _, s := range cursorSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCursor(t, b)
	})
}

func checkCursor(t *testing.T, b []byte) {
	t.Helper()
	if !utf8.Valid(b) {
		Valid(b) // must not panic; verdicts only match on UTF-8 input
		return
	}
	valid, truncated := stdVerdict(b)
	err := Check(b)
	if (err == nil) != valid {
		t.Fatalf("%q: Check = %v, encoding/json valid = %v", b, err, valid)
	}
	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) || se.Truncated != truncated {
			t.Fatalf("%q: error %v, want truncated=%v", b, err, truncated)
		}
		return
	}
	c := NewCursor(b)
	got, err := tree(c)
	if err != nil || c.End() != nil {
		t.Fatalf("%q: walking valid JSON: %v", b, err)
	}
	if want := stdTree(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: cursor decoded %#v, encoding/json %#v", b, got, want)
	}
	compact, err := AppendCompact(nil, b)
	if err != nil {
		t.Fatalf("%q: compact: %v", b, err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(compact, want.Bytes()) {
		t.Fatalf("%q: compact %q, want %q", b, compact, want.Bytes())
	}
}

func TestSpecial8(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	interesting := []byte{0, 0x1f, 0x20, 0x21, '"', '\\', 0x7f, 0x80, 0xff, 'a', 0x5b, 0x5d}
	for range 200000 {
		var w [8]byte
		for i := range w {
			if r.IntN(3) == 0 {
				w[i] = interesting[r.IntN(len(interesting))]
			} else {
				w[i] = byte(r.UintN(256))
			}
		}
		want := false
		for _, b := range w {
			if b < 0x20 || b == '"' || b == '\\' {
				want = true
			}
		}
		if got := special8(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("special8(%q) = %v, want %v", w, got, want)
		}
	}
}
