package sharelm_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/sharelm"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

var src = conv.Source{File: "s.jsonl", Line: 1}

func TestDecode(t *testing.T) {
	tests := []struct {
		name          string
		in            string
		reason        record.Reason
		id, roles     string
		lang          string
		toxic, redact bool
		meta          string
	}{
		{name: "share_lm record", in: `{"conversation_id":"a","conversation":[{"content":"hi","role":"user"},{"content":"yo","role":"assistant"}],"model_name":"gpt-4","source":"share_lm","conversation_metadata":{"language":"en","toxic":"False","redacted":"True","rate":""}}`,
			id: "a", roles: "user,assistant", lang: "en", redact: true,
			meta: `{"conversation_id":"a","model_name":"gpt-4","source":"share_lm","conversation_metadata":{"language":"en","toxic":"False","redacted":"True","rate":""}}`},
		{name: "human and bot", in: `{"conversation_id":7,"conversation":[{"content":"q","role":"Human"},{"content":"a","role":"bot"}],"conversation_metadata":{"toxic":true}}`, id: "7", roles: "user,assistant", toxic: true},
		{name: "odd flag values left unset", in: `{"conversation_id":"o","conversation":[{"content":"q","role":"user"}],"conversation_metadata":{"toxic":"maybe","redacted":3,"language":5}}`, id: "o", roles: "user"},
		{name: "metadata not an object", in: `{"conversation_id":"m","conversation":[{"content":"q","role":"user"}],"conversation_metadata":"x"}`, id: "m", roles: "user"},
		{name: "leading system", in: `{"conversation":[{"content":"be kind","role":"system"},{"content":"q","role":"user"}],"model_name":"x"}`, id: "sha-", roles: "user"},
		{name: "unknown role", in: `{"conversation_id":"u","conversation":[{"content":"q","role":"user"},{"content":"?","role":"narrator"}]}`, reason: record.UnknownRole},
		{name: "no user", in: `{"conversation_id":"n","conversation":[{"content":"a","role":"assistant"}]}`, reason: record.NoUserMessage},
		{name: "missing conversation", in: `{"conversation_id":"x","model_name":"m"}`, reason: record.MissingConversation},
		{name: "cut short", in: `{"conversation_id":"x","conversation":[{"content":"ab`, reason: record.TruncatedLine},
		{name: "broken metadata", in: `{"conversation_id":"x","conversation":[{"content":"a","role":"user"}],"conversation_metadata":{"toxic":}}`, reason: record.MalformedJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sharelm.Decode([]byte(tt.in), src)
			if err := jsonl.CheckRecord(r); err != nil {
				t.Fatal(err)
			}
			if tt.reason != "" {
				if r.Bad == nil || r.Bad.Reason != tt.reason {
					t.Fatalf("got %+v, want quarantine %s", r.Bad, tt.reason)
				}
				return
			}
			if r.Bad != nil {
				t.Fatalf("quarantined: %+v", r.Bad)
			}
			c := r.Conv
			var roles []string
			for _, m := range c.Messages {
				roles = append(roles, string(m.Role))
			}
			if !strings.HasPrefix(c.ID, tt.id) || strings.Join(roles, ",") != tt.roles || c.Language != tt.lang || c.Toxic != tt.toxic || c.Redacted != tt.redact || c.Format != sharelm.Format {
				t.Errorf("got id %q roles %v language %q toxic %v redacted %v format %s", c.ID, roles, c.Language, c.Toxic, c.Redacted, c.Format)
			}
			if tt.meta != "" && string(c.Meta) != tt.meta {
				t.Errorf("meta %s, want %s", c.Meta, tt.meta)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(`{"conversation_id":"a","conversation":[{"content":"hi","role":"user"}],"conversation_metadata":{"language":"en","toxic":"False"}}`)
	f.Add(`{"conversation":[{"content":"q","role":"human"},{"content":"a","role":"bot"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		if err := jsonl.CheckRecord(sharelm.Decode([]byte(s), src)); err != nil {
			t.Fatal(err)
		}
	})
}
