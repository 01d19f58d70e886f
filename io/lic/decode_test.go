package lic_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/lic"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/record"
)

var src = conv.Source{File: "lic.json", Line: 2}

func TestDecode(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		reason   record.Reason
		id       string
		contents string
	}{
		{name: "shards in shard order", in: `{"task_id":"t1","task":"math","shards":[{"shard_id":2,"shard":"b"},{"shard_id":1,"shard":"a"}],"answer":"#### 4"}`,
			id: "t1", contents: "a|b"},
		{name: "empty shards skipped", in: `{"task_id":"t2","shards":[{"shard_id":0,"shard":""},{"shard_id":1,"shard":"x"}]}`, id: "t2", contents: "x"},
		{name: "summary shards built from documents", in: `{"task_id":"s","task":"summary","query":"Q?","documents":[{"document_index":5,"document_text":"five"},{"document_index":9,"document_text":"nine"}],"shards":[{"shard_id":1,"shard":"","doc_idxs":[9]},{"shard_id":0,"shard":"","doc_idxs":[5]}]}`,
			id: "s", contents: "Q?\n\nDocument 5:\nfive|Document 9:\nnine"},
		{name: "no text at all", in: `{"task_id":"e","shards":[{"shard_id":0,"shard":""}]}`, reason: record.NoUserMessage},
		{name: "no shards", in: `{"task_id":"e"}`, reason: record.MissingConversation},
		{name: "shard_id a string", in: `{"task_id":"e","shards":[{"shard_id":"1","shard":"x"}]}`, reason: record.BadField},
		{name: "shard text a number", in: `{"task_id":"e","shards":[{"shard_id":1,"shard":3}]}`, reason: record.BadField},
		{name: "truncated", in: `{"task_id":"e","shards":[{"shard_id":1,"sha`, reason: record.TruncatedLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := lic.Decode([]byte(tt.in), src)
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
			var parts []string
			for _, m := range r.Conv.Messages {
				if m.Role != conv.User {
					t.Errorf("role %s", m.Role)
				}
				parts = append(parts, m.Content)
			}
			if got := strings.Join(parts, "|"); got != tt.contents || r.Conv.ID != tt.id || r.Conv.Format != "lic" {
				t.Errorf("got %q id %q, want %q", got, r.Conv.ID, tt.contents)
			}
			var meta map[string]any
			if err := json.Unmarshal(r.Conv.Meta, &meta); err != nil || meta["shards"] != nil || meta["task_id"] != tt.id {
				t.Errorf("meta %s", r.Conv.Meta)
			}
		})
	}
}

// TestSample reads the LiC sample in fixtures/lic: every record must come through
// with as many user turns as it has non-empty shards (summary shards are
// built from documents, so all of theirs count).
func TestSample(t *testing.T) {
	f, err := os.Open("../../fixtures/lic/sample_5_per_task.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := lic.NewReader(f, "sample.json")
	n := 0
	for {
		rec, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Conv == nil {
			t.Fatalf("quarantined: %+v", rec.Bad)
		}
		n++
		var m struct {
			Task   string                       `json:"task"`
			Shards []struct{ Shard string }     `json:"shards"`
			Docs   []map[string]json.RawMessage `json:"documents"`
		}
		if err := json.Unmarshal(rec.Conv.Meta, &m); err != nil || m.Task == "" || m.Shards != nil {
			t.Fatalf("%s: meta %v", rec.Conv.ID, err)
		}
		if len(rec.Conv.Messages) < 2 {
			t.Errorf("%s: %d user turns", rec.Conv.ID, len(rec.Conv.Messages))
		}
	}
	if n != 30 {
		t.Fatalf("read %d records, want 30", n)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"task_id":"t","shards":[{"shard_id":1,"shard":"a"}]}`))
	f.Add([]byte(`{"task_id":"s","query":"q","documents":[{"document_index":1,"document_text":"d"}],"shards":[{"shard_id":0,"shard":"","doc_idxs":[1,2]}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := lic.Decode(raw, src)
		if err := jsonl.CheckRecord(r); err != nil {
			t.Fatal(err)
		}
		if r.Conv != nil && !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
	})
}
