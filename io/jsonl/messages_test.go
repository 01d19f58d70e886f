package jsonl_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

// Three spellings of a messages array, as the chat formats use them.
var (
	plainMessages = jsonl.Messages{Field: "messages", Item: "message", Speaker: []string{"role"}, Text: []string{"content"}, Role: conv.ParseRole}
	partsMessages = jsonl.Messages{Field: "messages", Item: "message", Speaker: []string{"role"}, Text: []string{"content"}, Role: conv.ParseRole, Parts: true}
	turnMessages  = jsonl.Messages{Field: "conversations", Item: "turn", Speaker: []string{"from", "role"}, Text: []string{"value", "content"},
		Role: func(s string) (conv.Role, bool) {
			switch s {
			case "human":
				return conv.User, true
			case "gpt":
				return conv.Assistant, true
			}
			return conv.ParseRole(s)
		},
		UnknownRole: "turn %d is from unknown speaker %q"}
)

// readMessages runs f.Read on in, a messages value on its own.
func readMessages(f *jsonl.Messages, in string, d *conv.Conversation) (present bool, prob *jsonl.Problem, err error) {
	c := jsonl.NewCursor([]byte(in))
	present, err = f.Read(c, d, &prob)
	if err == nil {
		err = c.End()
	}
	return present, prob, err
}

// joined renders messages as role:content|role:content.
func joined(ms []conv.Message) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = string(m.Role) + ":" + m.Content
	}
	return strings.Join(parts, "|")
}

func TestMessagesRead(t *testing.T) {
	long := strings.Repeat("x", 50)
	tests := []struct {
		name     string
		f        *jsonl.Messages
		in       string
		absent   bool // the value is null
		system   string
		messages string
		reason   record.Reason
		detail   string
		syntax   bool // Read or End fails
	}{
		{name: "leading system", f: &plainMessages, in: `[{"role":"system","content":"S"},{"role":"user","content":"q"},{"role":"assistant","content":null}]`,
			system: "S", messages: "user:q|assistant:"},
		{name: "second system stays", f: &plainMessages, in: `[{"role":"system","content":"S"},{"role":"system","content":"T"},{"role":"user","content":"q"}]`,
			system: "S", messages: "system:T|user:q"},
		{name: "other members skipped", f: &plainMessages, in: `[{"name":"n","role":"user","tool_calls":[{}],"content":"q"}]`, messages: "user:q"},
		{name: "escaped names", f: &plainMessages, in: `[{"r\u006fle":"us\u0065r","content":"q"}]`, messages: "user:q"},
		{name: "null", f: &plainMessages, in: `null`, absent: true},
		{name: "empty", f: &plainMessages, in: `[]`},
		{name: "python repr", f: &plainMessages, in: `"[{'role': 'user'}]"`, reason: record.PythonReprString,
			detail: "messages is a string holding a Python repr, not a JSON array"},
		{name: "string", f: &plainMessages, in: `"hi"`, reason: record.BadField, detail: "messages is a string, not an array"},
		{name: "object", f: &plainMessages, in: `{}`, reason: record.BadField, detail: "messages is a object, not an array"},
		{name: "element not object", f: &plainMessages, in: `[1]`, reason: record.BadField, detail: "message 0 is a number, not an object"},
		{name: "no role", f: &plainMessages, in: `[{"role":"user"},{"content":"x"}]`, reason: record.BadField, detail: "message 1 has no role"},
		{name: "role not string", f: &plainMessages, in: `[{"role":1}]`, reason: record.BadField, detail: "message 0 role is a number, not a string"},
		{name: "unknown role", f: &plainMessages, in: `[{"role":"critic"}]`, reason: record.UnknownRole, detail: `message 0 has unknown role "critic"`},
		{name: "unknown role clipped", f: &plainMessages, in: `[{"role":"` + long + `"}]`, reason: record.UnknownRole,
			detail: `message 0 has unknown role "` + long[:40] + `..."`},
		{name: "content not string", f: &plainMessages, in: `[{"role":"user","content":[]}]`, reason: record.BadField,
			detail: "message 0 content is a array, not a string"},
		{name: "first problem wins", f: &plainMessages, in: `[{"role":"critic"},1]`, reason: record.UnknownRole, detail: `message 0 has unknown role "critic"`},
		{name: "syntax error after a problem", f: &plainMessages, in: `[{"role":"critic"},{]`, syntax: true},
		{name: "truncated", f: &plainMessages, in: `[{"role":"user","content":"q"`, syntax: true},
		{name: "alternative names", f: &turnMessages, in: `[{"from":"human","value":"q"},{"role":"gpt","content":"r"}]`, messages: "user:q|assistant:r"},
		{name: "format's unknown wording", f: &turnMessages, in: `[{"from":"alien","value":"q"}]`, reason: record.UnknownRole,
			detail: `turn 0 is from unknown speaker "alien"`},
		{name: "no speaker names the first", f: &turnMessages, in: `[{"value":"q"}]`, reason: record.BadField, detail: "turn 0 has no from"},
		{name: "member named as written", f: &turnMessages, in: `[{"from":"human","value":{}}]`, reason: record.BadField,
			detail: "turn 0 value is a object, not a string"},
		{name: "format's field name", f: &turnMessages, in: `7`, reason: record.BadField, detail: "conversations is a number, not an array"},
		{name: "parts", f: &partsMessages, in: `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},"b"]}]`,
			messages: "user:a\nb"},
		{name: "parts string", f: &partsMessages, in: `[{"role":"user","content":"q"}]`, messages: "user:q"},
		{name: "parts wrong type", f: &partsMessages, in: `[{"role":"user","content":5}]`, reason: record.BadField, detail: "message 0 content is a number"},
		{name: "part wrong type", f: &partsMessages, in: `[{"role":"user","content":["a",5]}]`, reason: record.BadField,
			detail: "message 0 content part 1 is a number"},
		{name: "part text wrong type", f: &partsMessages, in: `[{"role":"user","content":[{"text":{"value":"x"}}]}]`, reason: record.BadField,
			detail: "message 0 content part 0 text is a object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A conversation left over from an earlier value must not leak in.
			d := conv.Conversation{System: "old", Messages: []conv.Message{{Role: conv.User, Content: "old"}}}
			present, prob, err := readMessages(tt.f, tt.in, &d)
			if tt.syntax {
				if err == nil {
					t.Fatalf("no syntax error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if present == tt.absent {
				t.Errorf("present = %v", present)
			}
			if tt.reason != "" {
				if prob == nil || prob.Reason != tt.reason || prob.Detail != tt.detail {
					t.Fatalf("problem %+v, want %s %q", prob, tt.reason, tt.detail)
				}
				return
			}
			if prob != nil {
				t.Fatalf("problem %+v", prob)
			}
			if got := joined(d.Messages); got != tt.messages || d.System != tt.system {
				t.Errorf("system %q messages %q, want %q %q", d.System, got, tt.system, tt.messages)
			}
		})
	}
}

func TestObjectArray(t *testing.T) {
	var seen []int
	c := jsonl.NewCursor([]byte(`[{"a":1},2,{}]`))
	var prob *jsonl.Problem
	present, err := jsonl.ObjectArray(c, "shards", "shard", &prob, func(i int) error {
		seen = append(seen, i)
		return c.Skip()
	})
	if err != nil || !present {
		t.Fatalf("present %v, err %v", present, err)
	}
	if len(seen) != 2 || seen[0] != 0 || seen[1] != 2 {
		t.Errorf("fn called for %v, want [0 2]", seen)
	}
	if prob == nil || prob.Detail != "shard 1 is a number, not an object" {
		t.Errorf("problem %+v", prob)
	}
}

// FuzzMessagesRead checks Read against encoding/json: valid JSON never
// fails, and an array that raises no problem decodes to what a plain
// reading of it gives.
func FuzzMessagesRead(f *testing.F) {
	for _, s := range []string{
		`[{"role":"system","content":"S"},{"role":"user","content":"q"}]`, `null`, `[]`, `"[{'role': 1}]"`, `[1]`,
		`[{"role":"user","content":[{"text":"a"},"b"]}]`, `[{"from":"human","value":"q"}]`, `[{"role":"critic"}]`,
		`[{"role":"user","role":"assistant","content":"a","content":null}]`, `[{"role":"user","content":"q"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !utf8.Valid(in) {
			return // decoders check UTF-8 before any Cursor sees the input
		}
		for _, m := range []*jsonl.Messages{&plainMessages, &partsMessages, &turnMessages} {
			var d conv.Conversation
			present, prob, err := readMessages(m, string(in), &d)
			if valid := json.Valid(in); valid != (err == nil) {
				t.Fatalf("%s: valid JSON %v but error %v", in, valid, err)
			}
			if err != nil {
				continue
			}
			if isNull := strings.TrimSpace(string(in)) == "null"; present == isNull {
				t.Fatalf("%s: present %v", in, present)
			}
			if prob != nil && (prob.Detail == "" || !utf8.ValidString(prob.Detail)) {
				t.Fatalf("%s: bad detail %q", in, prob.Detail)
			}
			if m == &plainMessages && prob == nil && present {
				checkPlain(t, in, &d)
			}
		}
	})
}

// checkPlain decodes in, an array Read took without a problem, with
// encoding/json and compares.
func checkPlain(t *testing.T, in []byte, d *conv.Conversation) {
	t.Helper()
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(in, &msgs); err != nil {
		t.Fatalf("%s: Read raised no problem but encoding/json says %v", in, err)
	}
	var want conv.Conversation
	for _, obj := range msgs {
		var role, content *string
		errRole, errContent := json.Unmarshal(obj["role"], &role), json.Unmarshal(obj["content"], &content)
		if obj["role"] == nil || errRole != nil || role == nil {
			t.Fatalf("%s: a message without a role string raised no problem", in)
		}
		if obj["content"] != nil && errContent != nil {
			t.Fatalf("%s: content that is not a string raised no problem", in)
		}
		r, ok := conv.ParseRole(*role)
		if !ok {
			t.Fatalf("%s: unknown role %q raised no problem", in, *role)
		}
		if content == nil {
			content = new(string)
		}
		if r == conv.System && len(want.Messages) == 0 && want.System == "" {
			want.System = *content
			continue
		}
		want.Messages = append(want.Messages, conv.Message{Role: r, Content: *content})
	}
	if joined(d.Messages) != joined(want.Messages) || d.System != want.System {
		t.Fatalf("%s: got %q %q, encoding/json gives %q %q", in, d.System, joined(d.Messages), want.System, joined(want.Messages))
	}
}
