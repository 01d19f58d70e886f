package jsonl

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type gotLine struct {
	Line         int64
	Text         string
	TooLarge     bool
	Size         int64
	Unterminated bool
}

func readAll(t *testing.T, next func() (Chunk, error)) []gotLine {
	t.Helper()
	var out []gotLine
	for {
		ch, err := next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		text := string(ch.Bytes)
		if ch.TooLarge {
			text = ""
		}
		out = append(out, gotLine{ch.Line, text, ch.TooLarge, ch.Size, ch.Unterminated})
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // longer than the bufio buffer
	tests := []struct {
		name string
		in   string
		max  int
		want []gotLine
	}{
		{"empty input", "", 0, nil},
		{"plain lines", "a\nb\n", 0, []gotLine{{1, "a", false, 1, false}, {2, "b", false, 1, false}}},
		{"blank lines are skipped but counted", "a\n\n  \t\nb\n", 0, []gotLine{{1, "a", false, 1, false}, {4, "b", false, 1, false}}},
		{"CRLF endings", "a\r\nb\r\n", 0, []gotLine{{1, "a", false, 1, false}, {2, "b", false, 1, false}}},
		{"final line without newline", "a\nb", 0, []gotLine{{1, "a", false, 1, false}, {2, "b", false, 1, true}}},
		{"byte order mark", "\xef\xbb\xbfa\n", 0, []gotLine{{1, "a", false, 1, false}}},
		{"line exactly at the cap", "abcd\nx\n", 4, []gotLine{{1, "abcd", false, 4, false}, {2, "x", false, 1, false}}},
		{"line over the cap", "abcde\nx\n", 4, []gotLine{{1, "", true, 5, false}, {2, "x", false, 1, false}}},
		{"over the cap at the end", "x\nabcdefgh", 4, []gotLine{{1, "x", false, 1, false}, {2, "", true, 8, true}}},
		{"very long line under the cap", long + "\nx\n", 0, []gotLine{{1, long, false, int64(len(long)), false}, {2, "x", false, 1, false}}},
		{"very long line over the cap", long + "\nx\n", 1 << 20, []gotLine{{1, "", true, int64(len(long)), false}, {2, "x", false, 1, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				if len(tt.in) > 1<<20 {
					r = strings.NewReader(tt.in)
				}
				got := readAll(t, NewLineReader(r, tt.max).Next)
				if len(got) != len(tt.want) {
					t.Fatalf("got %d lines, want %d: %+v", len(got), len(tt.want), got)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						g, w := got[i], tt.want[i]
						g.Text, w.Text = trunc(g.Text), trunc(w.Text)
						t.Errorf("line %d: got %+v, want %+v", i, g, w)
					}
				}
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

func TestLineReaderKeepsExcerptOfLongLine(t *testing.T) {
	r := NewLineReader(strings.NewReader(`{"a":"`+strings.Repeat("y", 100)+"\"}\n"), 50)
	ch, err := r.Next()
	if err != nil || !ch.TooLarge || !bytes.HasPrefix(ch.Bytes, []byte(`{"a":"yyy`)) {
		t.Fatalf("got %+v, %v", ch, err)
	}
}

func TestArrayReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []gotLine
		wantErr bool
	}{
		{"empty array", " [ ] ", nil, false},
		{"empty input", "", nil, false},
		{"elements with line numbers", "[\n  {\"a\": 1},\n  {\"b\": \"x]}\\\"{\"}\n]\n",
			[]gotLine{{2, `{"a": 1}`, false, 8, false}, {3, `{"b": "x]}\"{"}`, false, 15, false}}, false},
		{"multi-line element starts on its brace", "[{\n\"a\":\n1\n},\n\n{}]",
			[]gotLine{{1, "{\n\"a\":\n1\n}", false, 10, false}, {6, "{}", false, 2, false}}, false},
		{"scalars", "[1, \"s\", true]", []gotLine{{1, "1", false, 1, false}, {1, `"s"`, false, 3, false}, {1, "true", false, 4, false}}, false},
		{"cut inside an element", "[{\"a\":1},{\"b\":", []gotLine{{1, `{"a":1}`, false, 7, false}, {1, `{"b":`, false, 5, true}}, false},
		{"cut between elements", "[{\"a\":1},", []gotLine{{1, `{"a":1}`, false, 7, false}, {1, "", false, 0, true}}, false},
		{"missing comma", "[{} {}]", []gotLine{{1, "{}", false, 2, false}}, true},
		{"trailing comma", "[{},]", []gotLine{{1, "{}", false, 2, false}}, true},
		{"junk after the array", "[{}] x", []gotLine{{1, "{}", false, 2, false}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewArrayReader(iotest.OneByteReader(strings.NewReader(tt.in)), 0)
			var got []gotLine
			var err error
			for {
				var ch Chunk
				ch, err = a.Next()
				if err != nil {
					break
				}
				got = append(got, gotLine{ch.Line, string(ch.Bytes), ch.TooLarge, ch.Size, ch.Unterminated})
			}
			if (err != io.EOF) != tt.wantErr {
				t.Fatalf("error %v, want error: %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("element %d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestArrayReaderCap(t *testing.T) {
	in := `[{"a":"` + strings.Repeat("z", 100) + `"},{"b":2}]`
	got := readAll(t, NewArrayReader(strings.NewReader(in), 40).Next)
	if len(got) != 2 || !got[0].TooLarge || got[0].Size != 108 || got[1].Text != `{"b":2}` {
		t.Fatalf("got %+v", got)
	}
}

func TestChunkReaderSniffsArrays(t *testing.T) {
	for _, tt := range []struct {
		in    string
		array bool
	}{
		{"\xef\xbb\xbf \n [{}]", true},
		{"{}\n{}", false},
		{"", false},
		{"[", true},
		{"[oops", true}, // one line: nothing else to go by
		{"[\n  {\"a\": 1},\n  {\"a\": 2}\n]\n", true},
		{"[\n{\"a\": 1}\n]\n", true},
		{"[{\"a\":1},\n{\"a\":2}\n]\n", true},
		{"[{\"a\":1},\n{\"a\":2},\n{\"a\":3}]\n", true},
		{"[{\"a\":1}\n,{\"a\":2}\n,{\"a\":3}\n]", true},
		{"[{\"a\":1},\n{\"a\":", true},
		// JSON Lines whose first line is broken or not a record.
		{"[oops\n{\"a\":1}\n{\"a\":2}\n", false},
		{"[oops\n{\"a\":1}", false},
		{"[1, 2]\n{\"a\":1}\n", false},
		{"[{\"a\":1\n{\"a\":1}\n{\"a\":2}\n{\"b\n{\"a\":3}\n", false},
		{"\xef\xbb\xbf[oops\r\n\r\n{\"a\":1}\r\n", false},
	} {
		cr := NewChunkReader(strings.NewReader(tt.in))
		readAll(t, cr.Next)
		if cr.Array != tt.array {
			t.Errorf("%q: array %v, want %v", tt.in, cr.Array, tt.array)
		}
	}
}
