package jsonl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ac3/ac3/io/compress"
	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/openaichat"
	"github.com/ac3/ac3/pipeline/conv"
)

// stdJSON is what encoding/json writes for c with HTML escaping off; the
// hand-written encoder must match it byte for byte.
func stdJSON(t testing.TB, c *conv.Conversation) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var writerCases = []conv.Conversation{
	{ID: "a", Source: conv.Source{File: "f.jsonl", Line: 3}, Format: "wildchat",
		Messages: []conv.Message{{Role: conv.User, Content: "hi <b> & \"q\"\n\t\u2028\x01\x7f é 😀"}, {Role: conv.Assistant, Content: ""}}},
	{ID: "b", Source: conv.Source{File: "p.parquet", Row: 7}, Format: "openai", System: "sys",
		Messages: []conv.Message{{Role: conv.User, Content: "x"}}, Language: "English", Toxic: true, Redacted: true,
		Meta: json.RawMessage("{\n  \"k\": [1, 2, {\"s\": \"a b\"}],\n  \"n\": null\n}")},
	{ID: "c", Format: "lic", Messages: []conv.Message{{Role: conv.User, Content: "bad \xff utf8 \xe2\x82"}}},
	{ID: "d"},
	{ID: "e", Format: "sharegpt", Messages: []conv.Message{{Role: conv.User, Content: "你好"}}, Language: "Chinese",
		LanguageSource: conv.LanguageIdentified, LanguageDetector: "whatlanggo v1.0.1", LanguageConfidence: 0.8731},
	{ID: "f", Format: "sharegpt", Messages: []conv.Message{{Role: conv.User, Content: "ok"}}, Language: "Zulu",
		LanguageSource: conv.LanguageIdentified, LanguageDetector: "d", LanguageConfidence: 3e-7},
	{ID: "g", Format: "wildchat", Messages: []conv.Message{{Role: conv.User, Content: "hi"}}, Language: "English",
		LanguageSource: conv.LanguageFromInput},
}

func TestWriterMatchesEncodingJSON(t *testing.T) {
	for _, c := range writerCases {
		got, err := jsonl.AppendConversation(nil, &c)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		if want := stdJSON(t, &c); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", c.ID, got, want)
		}
	}
}

func TestWriterRejectsBadMeta(t *testing.T) {
	var buf bytes.Buffer
	w := jsonl.NewWriter(&buf)
	c := conv.Conversation{ID: "x", Meta: json.RawMessage(`{"a":`)}
	if err := w.Write(&c); err == nil {
		t.Fatal("wrote a conversation with broken meta")
	}
	if err := w.Close(); err != nil || buf.Len() != 0 {
		t.Fatalf("close: %v, wrote %q", err, buf.Bytes())
	}
}

func FuzzWriter(f *testing.F) {
	f.Add("id", "hello\n\"world\"", "sys", []byte(`{"a":1}`), "", 0.0)
	f.Add("", "\xff\u2029<>&", "", []byte(nil), "input", 0.5)
	f.Add("id", "x", "", []byte(nil), "identified", 1e-9)
	f.Fuzz(func(t *testing.T, id, content, system string, meta []byte, source string, confidence float64) {
		if math.IsNaN(confidence) || math.IsInf(confidence, 0) {
			return // not a JSON number: both writers refuse it
		}
		c := conv.Conversation{ID: id, Format: "openai", System: system,
			Messages:       []conv.Message{{Role: conv.User, Content: content}},
			LanguageSource: source, LanguageDetector: source, LanguageConfidence: confidence}
		if json.Valid(meta) {
			c.Meta = meta
		}
		got, err := jsonl.AppendConversation(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		if want := stdJSON(t, &c); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

func TestCreateRoundTrip(t *testing.T) {
	in := []conv.Conversation{writerCases[0], writerCases[1], writerCases[4], writerCases[5]}
	for _, name := range []string{"out.jsonl", "out.jsonl.zst", "out.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := jsonl.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := range in {
				if err := w.Write(&in[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rc, err := compress.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			r := openaichat.NewReader(rc, name)
			for i := range in {
				rec, err := r.Next(context.Background())
				if err != nil || rec.Conv == nil {
					t.Fatalf("record %d: %v %+v", i, err, rec.Bad)
				}
				want := in[i]
				want.Source = conv.Source{File: name, Line: int64(i + 1)}
				if len(want.Meta) > 0 {
					var b bytes.Buffer
					json.Compact(&b, want.Meta)
					want.Meta = b.Bytes()
				}
				if !reflect.DeepEqual(*rec.Conv, want) {
					t.Errorf("record %d:\n got %+v\nwant %+v", i, *rec.Conv, want)
				}
			}
			if _, err := r.Next(context.Background()); err != io.EOF {
				t.Fatalf("want EOF, got %v", err)
			}
		})
	}
}

func TestCreateWritesNothingAtThePathUntilClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl.zst")
	w, err := jsonl.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&writerCases[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the path exists before Close: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("Abort left %d files behind", len(es))
	}
}
