package wildchat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/wildchat"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

var src = conv.Source{File: "t.jsonl", Line: 1}

func TestDecode(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		reason record.Reason // "" for a good record
		id     string
		roles  string
		meta   string
	}{
		{name: "current release", in: `{"conversation_hash":"h1","model":"m","conversation":[{"role":"user","content":"hi","turn_identifier":1},{"role":"assistant","content":"yo"}],"turn":1,"language":"English","toxic":true,"redacted":false}`,
			id: "h1", roles: "user,assistant", meta: `{"conversation_hash":"h1","model":"m","turn":1,"language":"English","toxic":true,"redacted":false}`},
		{name: "older release id", in: `{"conversation_id":"old","conversation":[{"role":"user","content":"a"}]}`, id: "old", roles: "user", meta: `{"conversation_id":"old"}`},
		{name: "leading system message", in: `{"conversation_hash":"s","conversation":[{"role":"system","content":"be nice"},{"role":"user","content":"a"},{"role":"tool","content":"t"}]}`, id: "s", roles: "user,tool"},
		{name: "no id gets a content hash", in: `{"conversation":[{"role":"user","content":"a"}],"turn":1}`, id: "sha-", roles: "user"},
		{name: "null content", in: `{"conversation_hash":"n","conversation":[{"role":"user","content":null},{"role":"user","content":"b"}]}`, id: "n", roles: "user,user"},
		{name: "malformed", in: `{"conversation_hash":"x","conversation":[],}`, reason: record.MalformedJSON},
		{name: "trailing junk", in: `{"conversation":[{"role":"user","content":"a"}]} x`, reason: record.MalformedJSON},
		{name: "cut short", in: `{"conversation_hash":"x","conversation":[{"role":"user","content":"abc`, reason: record.TruncatedLine},
		{name: "cut in a literal", in: `{"toxic":fal`, reason: record.TruncatedLine},
		{name: "syntax error beats a field problem", in: `{"conversation":"[{'role': 'user'}]","x":}`, reason: record.MalformedJSON},
		{name: "invalid UTF-8", in: "{\"conversation\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", reason: record.InvalidUTF8},
		{name: "unknown role", in: `{"conversation":[{"role":"user","content":"a"},{"role":"wizard","content":"b"}]}`, reason: record.UnknownRole},
		{name: "no user", in: `{"conversation":[{"role":"assistant","content":"a"}]}`, reason: record.NoUserMessage},
		{name: "empty conversation", in: `{"conversation":[]}`, reason: record.NoUserMessage},
		{name: "missing conversation", in: `{"conversation_hash":"x"}`, reason: record.MissingConversation},
		{name: "null conversation", in: `{"conversation":null}`, reason: record.MissingConversation},
		{name: "python repr", in: `{"conversation":"[{'content': 'hi', 'role': 'user'}]"}`, reason: record.PythonReprString},
		{name: "double-encoded JSON", in: `{"conversation":"[{\"content\": \"hi\", \"role\": \"user\"}]"}`, reason: record.BadField},
		{name: "conversation is a number", in: `{"conversation":3}`, reason: record.BadField},
		{name: "toxic is a string", in: `{"conversation":[{"role":"user","content":"a"}],"toxic":"no"}`, reason: record.BadField},
		{name: "message is a string", in: `{"conversation":["hi"]}`, reason: record.BadField},
		{name: "message without role", in: `{"conversation":[{"content":"hi"}]}`, reason: record.BadField},
		{name: "content is an object", in: `{"conversation":[{"role":"user","content":{}}]}`, reason: record.BadField},
		{name: "not an object", in: `[1,2]`, reason: record.BadField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wildchat.Decode([]byte(tt.in), src)
			if err := jsonl.CheckRecord(r); err != nil {
				t.Fatal(err)
			}
			if tt.reason != "" {
				if r.Bad == nil || r.Bad.Reason != tt.reason {
					t.Fatalf("got %+v %+v, want reason %s", r.Conv, r.Bad, tt.reason)
				}
				if r.Bad.Source != src {
					t.Errorf("source %+v", r.Bad.Source)
				}
				return
			}
			if r.Bad != nil {
				t.Fatalf("quarantined: %+v", r.Bad)
			}
			c := r.Conv
			if !strings.HasPrefix(c.ID, tt.id) || c.Format != "wildchat" || c.Source != src {
				t.Errorf("id %q format %q source %+v", c.ID, c.Format, c.Source)
			}
			var roles []string
			for _, m := range c.Messages {
				roles = append(roles, string(m.Role))
			}
			if got := strings.Join(roles, ","); got != tt.roles {
				t.Errorf("roles %s, want %s", got, tt.roles)
			}
			if tt.meta != "" && string(c.Meta) != tt.meta {
				t.Errorf("meta %s\nwant %s", c.Meta, tt.meta)
			}
		})
	}
}

func TestDecodeLiftsFields(t *testing.T) {
	r := wildchat.Decode([]byte(`{"conversation":[{"role":"system","content":"S"},{"role":"user","content":"a\nb"}],"language":"Spanish","toxic":true,"redacted":true}`), src)
	c := r.Conv
	if c == nil || c.Language != "Spanish" || !c.Toxic || !c.Redacted || c.System != "S" || c.Messages[0].Content != "a\nb" {
		t.Fatalf("got %+v %+v", c, r.Bad)
	}
	if c.ID != "sha-"+c.ContentHash() {
		t.Errorf("id %s", c.ID)
	}
}

// TestDecodeSample checks the real WildChat lines against encoding/json.
func TestDecodeSample(t *testing.T) {
	for i, line := range sampleLines(t) {
		r := wildchat.Decode(line, conv.Source{File: "s", Line: int64(i + 1)})
		if err := jsonl.CheckRecord(r); err != nil || r.Conv == nil {
			t.Fatalf("line %d: %v %+v", i+1, err, r.Bad)
		}
		var want struct {
			Hash string `json:"conversation_hash"`
			Conv []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"conversation"`
			Language string `json:"language"`
			Turn     int    `json:"turn"`
		}
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		c := r.Conv
		if c.ID != want.Hash || c.Language != want.Language || len(c.Messages) != len(want.Conv) || c.UserTurns() != want.Turn {
			t.Fatalf("line %d: got id %s lang %s %d messages", i+1, c.ID, c.Language, len(c.Messages))
		}
		for j, m := range want.Conv {
			if string(c.Messages[j].Role) != m.Role || c.Messages[j].Content != m.Content {
				t.Fatalf("line %d message %d differs", i+1, j)
			}
		}
		var meta map[string]any
		if err := json.Unmarshal(c.Meta, &meta); err != nil || meta["conversation"] != nil || meta["openai_moderation"] == nil {
			t.Fatalf("line %d: meta %v", i+1, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"conversation_hash":"h","conversation":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"conversation":"[{'role': 'user'}]"}`))
	f.Add([]byte(`{"conversation":[{"role":"assistant","content":"x"}],"toxic":null}`))
	f.Add([]byte("{\"conversation\":[{\"role\":\"user\",\"content\":\"\\ud800\xff\"}]}"))
	for _, l := range sampleLinesQuiet() {
		f.Add(l[:min(len(l), 2000)])
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := wildchat.Decode(raw, src)
		if err := jsonl.CheckRecord(r); err != nil {
			t.Fatal(err)
		}
		if r.Conv != nil && !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"conversation\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n\n{\"conversation\":1}\n{"))
	f.Add([]byte("[{\"conversation\":[{\"role\":\"user\",\"content\":\"hi\"}]},\n{\"x\":"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := wildchat.NewReader(strings.NewReader(string(in)), "f", jsonl.WithMaxLineBytes(64))
		for {
			rec, err := r.Next(context.Background())
			if err != nil {
				return // io.EOF, or an array that cannot be read further
			}
			if err := jsonl.CheckRecord(rec); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestReaderStreams pushes 50,000 lines through a pipe. The writer blocks
// until the reader has taken most of what it wrote, so the test only passes
// if records come out while input is still going in.
func TestReaderStreams(t *testing.T) {
	const n = 50000
	pr, pw := io.Pipe()
	go func() {
		for i := range n {
			fmt.Fprintf(pw, `{"conversation_hash":"c%d","conversation":[{"role":"user","content":"question %d"},{"role":"assistant","content":"answer"}]}`+"\n", i, i)
		}
		pw.Close()
	}()
	r := wildchat.NewReader(pr, "pipe")
	defer r.Close()
	ctx := context.Background()
	for i := 0; ; i++ {
		rec, err := r.Next(ctx)
		if err == io.EOF {
			if i != n {
				t.Fatalf("read %d records, want %d", i, n)
			}
			return
		}
		if err != nil || rec.Conv == nil || rec.Conv.ID != fmt.Sprintf("c%d", i) || rec.Conv.Source.Line != int64(i+1) {
			t.Fatalf("record %d: %v %+v", i, err, rec)
		}
	}
}

func TestReaderHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := wildchat.NewReader(strings.NewReader("{}\n"), "f")
	if _, err := r.Next(ctx); err != context.Canceled {
		t.Fatalf("got %v", err)
	}
}
