package sharegpt_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/sharegpt"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

var src = conv.Source{File: "s.json", Line: 5}

func TestDecode(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		reason   record.Reason
		id       string
		system   string
		contents string
		meta     string
	}{
		{name: "human and gpt", in: `{"id":"a","conversations":[{"from":"human","value":"q"},{"from":"gpt","value":"r"}],"lang":"en"}`,
			id: "a", contents: "user:q|assistant:r", meta: `{"id":"a","lang":"en"}`},
		{name: "all speaker names", in: `{"conversations":[{"from":"system","value":"S"},{"from":"User","value":"1"},{"from":"chatgpt","value":"2"},{"from":"bard","value":"3"},{"from":"model","value":"4"},{"from":"function","value":"5"},{"from":"observation","value":"6"},{"from":"tool","value":"7"},{"from":"assistant","value":"8"}]}`,
			id: "sha-", system: "S", contents: "user:1|assistant:2|assistant:3|assistant:4|tool:5|tool:6|tool:7|assistant:8"},
		{name: "role and content aliases", in: `{"conversations":[{"role":"user","content":"q"}],"system":"top"}`,
			id: "sha-", system: "top", contents: "user:q", meta: `{"system":"top"}`},
		{name: "unknown speaker", in: `{"conversations":[{"from":"human","value":"q"},{"from":"narrator","value":"x"}]}`, reason: record.UnknownRole},
		{name: "no human", in: `{"conversations":[{"from":"gpt","value":"x"}]}`, reason: record.NoUserMessage},
		{name: "missing", in: `{"id":"x","messages":[]}`, reason: record.MissingConversation},
		{name: "python repr", in: `{"conversations":"[{'from': 'human', 'value': 'x'}]"}`, reason: record.PythonReprString},
		{name: "value is a number", in: `{"conversations":[{"from":"human","value":1}]}`, reason: record.BadField},
		{name: "no from", in: `{"conversations":[{"value":"x"}]}`, reason: record.BadField},
		{name: "truncated", in: `{"conversations":[{"from":"human","val`, reason: record.TruncatedLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sharegpt.Decode([]byte(tt.in), src)
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
			if !strings.HasPrefix(c.ID, tt.id) || c.Format != "sharegpt" || c.System != tt.system {
				t.Errorf("id %q format %q system %q", c.ID, c.Format, c.System)
			}
			if tt.meta != "" && string(c.Meta) != tt.meta {
				t.Errorf("meta %s, want %s", c.Meta, tt.meta)
			}
		})
	}
}

func TestReaderArrayAndLinesAgree(t *testing.T) {
	const array = "[\n  {\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"x\"}]},\n  {\"id\": \"b\",\n   \"conversations\": []},\n  {\"id\": \"c\", \"conversations\": [{\"from\": \"human\", \"value\": \"y\"}]}\n]\n"
	const lines = "{\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"x\"}]}\n{\"id\": \"b\", \"conversations\": []}\n{\"id\": \"c\", \"conversations\": [{\"from\": \"human\", \"value\": \"y\"}]}\n"
	type got struct {
		id   string
		line int64
		bad  record.Reason
	}
	read := func(in string) []got {
		r := sharegpt.NewReader(strings.NewReader(in), "f")
		var out []got
		for {
			rec, err := r.Next(context.Background())
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Bad != nil {
				out = append(out, got{"", rec.Bad.Source.Line, rec.Bad.Reason})
			} else {
				out = append(out, got{rec.Conv.ID, rec.Conv.Source.Line, ""})
			}
		}
	}
	a, l := read(array), read(lines)
	wantA := []got{{"a", 2, ""}, {"", 3, record.NoUserMessage}, {"c", 5, ""}}
	wantL := []got{{"a", 1, ""}, {"", 2, record.NoUserMessage}, {"c", 3, ""}}
	for i := range wantA {
		if len(a) != 3 || a[i] != wantA[i] {
			t.Fatalf("array: %+v", a)
		}
		if len(l) != 3 || l[i] != wantL[i] {
			t.Fatalf("lines: %+v", l)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"a","conversations":[{"from":"human","value":"q"},{"from":"gpt","value":"r"}]}`))
	f.Add([]byte(`{"conversations":"[{'from': 'human'}]"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := sharegpt.Decode(raw, src)
		if err := jsonl.CheckRecord(r); err != nil {
			t.Fatal(err)
		}
		if r.Conv != nil && !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("[{\"conversations\":[{\"from\":\"human\",\"value\":\"q\"}]},\n{\"conversations\":[]}]"))
	f.Add([]byte("{\"conversations\":[{\"from\":\"human\",\"value\":\"q\"}]}\n{\"conv"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := sharegpt.NewReader(strings.NewReader(string(in)), "f", jsonl.WithMaxLineBytes(64))
		for {
			rec, err := r.Next(context.Background())
			if err != nil {
				return
			}
			if err := jsonl.CheckRecord(rec); err != nil {
				t.Fatal(err)
			}
		}
	})
}
