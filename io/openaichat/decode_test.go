package openaichat_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/openaichat"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

var src = conv.Source{File: "o.jsonl", Line: 2}

func TestDecode(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		reason   record.Reason
		id       string
		format   string
		system   string
		contents string
		meta     string
	}{
		{name: "string content", in: `{"id":"a","messages":[{"role":"system","content":"S"},{"role":"user","content":"q"},{"role":"assistant","content":"r"}],"model":"m"}`,
			id: "a", format: "openai", system: "S", contents: "user:q|assistant:r", meta: `{"model":"m"}`},
		{name: "content parts", in: `{"messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"two"}]}]}`,
			id: "sha-", format: "openai", contents: "user:one\ntwo"},
		{name: "developer role and tool calls", in: `{"id":7,"messages":[{"role":"developer","content":"D"},{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"function","content":"f"}]}`,
			id: "7", format: "openai", system: "D", contents: "user:q|assistant:|tool:f"},
		{name: "canonical record", in: `{"id":"c","source":{"file":"x","line":4},"format":"wildchat","system":"S","messages":[{"role":"user","content":"q"}],"language":"English","toxic":true,"meta":{"model":"gpt"}}`,
			id: "c", format: "wildchat", system: "S", contents: "user:q", meta: `{"model":"gpt"}`},
		{name: "canonical meta wins over extra fields", in: `{"id":"c","messages":[{"role":"user","content":"q"}],"meta":{"a":1},"extra":2}`,
			id: "c", format: "openai", contents: "user:q", meta: `{"a":1}`},
		{name: "system field and system message", in: `{"system":"F","messages":[{"role":"system","content":"M"},{"role":"user","content":"q"}]}`,
			id: "sha-", format: "openai", system: "F", contents: "system:M|user:q"},
		{name: "missing messages", in: `{"id":"x"}`, reason: record.MissingConversation},
		{name: "null messages", in: `{"messages":null}`, reason: record.MissingConversation},
		{name: "python repr messages", in: `{"messages":"[{'role': 'user', 'content': 'x'}]"}`, reason: record.PythonReprString},
		{name: "unknown role", in: `{"messages":[{"role":"user","content":"q"},{"role":"critic","content":"x"}]}`, reason: record.UnknownRole},
		{name: "no user", in: `{"messages":[{"role":"system","content":"S"},{"role":"assistant","content":"x"}]}`, reason: record.NoUserMessage},
		{name: "content number", in: `{"messages":[{"role":"user","content":5}]}`, reason: record.BadField},
		{name: "meta array", in: `{"messages":[{"role":"user","content":"q"}],"meta":[]}`, reason: record.BadField},
		{name: "truncated", in: `{"messages":[{"role":"user","content":"q"`, reason: record.TruncatedLine},
		{name: "malformed", in: `{"messages":[{"role":"user" "content":"q"}]}`, reason: record.MalformedJSON},
		{name: "invalid UTF-8", in: "{\"messages\":[],\"x\":\"\xc3\x28\"}", reason: record.InvalidUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := openaichat.Decode([]byte(tt.in), src)
			if err := jsonl.CheckRecord(r); err != nil {
				t.Fatal(err)
			}
			if tt.reason != "" {
				if r.Bad == nil || r.Bad.Reason != tt.reason {
					t.Fatalf("got %+v %+v, want %s", r.Conv, r.Bad, tt.reason)
				}
				return
			}
			if r.Bad != nil {
				t.Fatalf("quarantined: %+v", r.Bad)
			}
			c := r.Conv
			var parts []string
			for _, m := range c.Messages {
				parts = append(parts, string(m.Role)+":"+m.Content)
			}
			if got := strings.Join(parts, "|"); got != tt.contents {
				t.Errorf("messages %q, want %q", got, tt.contents)
			}
			if !strings.HasPrefix(c.ID, tt.id) || c.Format != tt.format || c.System != tt.system || c.Source != src {
				t.Errorf("id %q format %q system %q source %+v", c.ID, c.Format, c.System, c.Source)
			}
			if string(c.Meta) != tt.meta {
				t.Errorf("meta %s, want %s", c.Meta, tt.meta)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"a","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"meta":{}}`))
	f.Add([]byte(`{"messages":"[{'role':'user'}]"}`))
	f.Add([]byte(`{"format":"x","source":{},"messages":[{"role":"developer","content":"d"},{"role":"user","content":null}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := openaichat.Decode(raw, src)
		if err := jsonl.CheckRecord(r); err != nil {
			t.Fatal(err)
		}
		if r.Conv != nil && !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
	})
}
