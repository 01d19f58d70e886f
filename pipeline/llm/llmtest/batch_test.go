package llmtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

func do(t *testing.T, method, url string, body io.Reader, ctype string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func upload(t *testing.T, s *llmtest.Server, content string) string {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "in.jsonl")
	_, _ = io.WriteString(fw, content)
	_ = mw.Close()
	code, b := do(t, http.MethodPost, s.URL+"/files", &buf, mw.FormDataContentType())
	if code != 200 {
		t.Fatalf("upload: %d %s", code, b)
	}
	var f struct{ ID string }
	_ = json.Unmarshal(b, &f)
	return f.ID
}

type batchObj struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	OutputFileID  string `json:"output_file_id"`
	ErrorFileID   string `json:"error_file_id"`
	RequestCounts struct {
		Total, Completed, Failed int
	} `json:"request_counts"`
}

func create(t *testing.T, s *llmtest.Server, fileID string) batchObj {
	t.Helper()
	code, b := do(t, http.MethodPost, s.URL+"/batches", strings.NewReader(`{"input_file_id":"`+fileID+`","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"run":"r1"}}`), "application/json")
	if code != 200 {
		t.Fatalf("create: %d %s", code, b)
	}
	var o batchObj
	_ = json.Unmarshal(b, &o)
	return o
}

func get(t *testing.T, s *llmtest.Server, id string) batchObj {
	t.Helper()
	code, b := do(t, http.MethodGet, s.URL+"/batches/"+id, nil, "")
	if code != 200 {
		t.Fatalf("retrieve: %d %s", code, b)
	}
	var o batchObj
	_ = json.Unmarshal(b, &o)
	return o
}

func content(t *testing.T, s *llmtest.Server, id string) []map[string]any {
	t.Helper()
	if id == "" {
		return nil
	}
	code, b := do(t, http.MethodGet, s.URL+"/files/"+id+"/content", nil, "")
	if code != 200 {
		t.Fatalf("content: %d %s", code, b)
	}
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func inputFile(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"k%d","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"q%d"}]}}`+"\n", i, i)
	}
	return b.String()
}

func TestBatchLifecycle(t *testing.T) {
	tests := []struct {
		name                       string
		opts                       llmtest.BatchOptions
		fail                       bool // a rule fails q1 with 400
		cancel                     bool
		polls                      int
		status                     string
		completed, failed, outputs int
	}{
		{name: "completes after polls", opts: llmtest.BatchOptions{Polls: 2}, polls: 2, status: "completed", completed: 3, outputs: 3},
		{name: "per-request error", fail: true, status: "completed", completed: 2, failed: 1, outputs: 2},
		{name: "expires part way", opts: llmtest.BatchOptions{ExpireAfter: 1}, status: "expired", completed: 1, failed: 2, outputs: 1},
		{name: "fails validation", opts: llmtest.BatchOptions{Fail: "bad file"}, status: "failed"},
		{name: "cancelled", opts: llmtest.BatchOptions{Polls: 5}, cancel: true, status: "cancelled", failed: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.New(t, llmtest.Options{Batch: tc.opts})
			if tc.fail {
				s.Add(llmtest.Rule{Name: "bad", LastContains: "q1", Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "bad request"}})
			}
			s.Reply("q", "answer")
			id := upload(t, s, inputFile(3))
			b := create(t, s, id)
			if tc.cancel {
				code, body := do(t, http.MethodPost, s.URL+"/batches/"+b.ID+"/cancel", nil, "")
				if code != 200 {
					t.Fatalf("cancel: %d %s", code, body)
				}
			}
			for i := range tc.polls {
				if g := get(t, s, b.ID); g.Status != "in_progress" {
					t.Fatalf("poll %d: status %s, want in_progress", i, g.Status)
				}
			}
			g := get(t, s, b.ID)
			if g.Status != tc.status || g.RequestCounts.Completed != tc.completed || g.RequestCounts.Failed != tc.failed {
				t.Fatalf("got %+v, want %s with %d completed %d failed", g, tc.status, tc.completed, tc.failed)
			}
			outs := content(t, s, g.OutputFileID)
			if len(outs) != tc.outputs {
				t.Fatalf("%d output lines, want %d", len(outs), tc.outputs)
			}
			for _, o := range outs {
				resp := o["response"].(map[string]any)
				body := resp["body"].(map[string]any)
				msg := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
				if resp["status_code"].(float64) != 200 || msg["content"] != "answer" {
					t.Errorf("output line %v", o)
				}
			}
			errs := content(t, s, g.ErrorFileID)
			if len(errs) != tc.failed {
				t.Fatalf("%d error lines, want %d", len(errs), tc.failed)
			}
			if tc.fail && errs[0]["custom_id"] != "k1" {
				t.Errorf("error line %v", errs[0])
			}
			for _, c := range s.Calls() {
				if c.Batch != b.ID || !strings.HasPrefix(c.Key, "k") {
					t.Errorf("call %+v: not logged as a line of %s", c, b.ID)
				}
			}
		})
	}
}

func TestBatchValidationAndList(t *testing.T) {
	s := llmtest.New(t, llmtest.Options{})
	dup := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}` + "\n" + `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}` + "\n"
	b1 := create(t, s, upload(t, s, dup))
	if b1.Status != "failed" {
		t.Errorf("duplicate custom_id: status %s", b1.Status)
	}
	b2 := create(t, s, upload(t, s, inputFile(1)))
	code, body := do(t, http.MethodGet, s.URL+"/batches?limit=1", nil, "")
	var list struct {
		Data    []batchObj
		HasMore bool `json:"has_more"`
	}
	_ = json.Unmarshal(body, &list)
	if code != 200 || len(list.Data) != 1 || list.Data[0].ID != b2.ID || !list.HasMore {
		t.Errorf("list: %d %s", code, body)
	}
	code, body = do(t, http.MethodGet, s.URL+"/batches?limit=5&after="+b2.ID, nil, "")
	_ = json.Unmarshal(body, &list)
	if code != 200 || len(list.Data) != 1 || list.Data[0].ID != b1.ID || list.HasMore {
		t.Errorf("list after: %d %s", code, body)
	}
	if code, _ := do(t, http.MethodGet, s.URL+"/batches/nope", nil, ""); code != 404 {
		t.Errorf("unknown batch: %d", code)
	}
	if got := s.Batches(); len(got) != 2 || s.Files() != 2 {
		t.Errorf("Batches %v Files %d", got, s.Files())
	}
	s.SetBatch(llmtest.BatchOptions{CreateStatus: 500})
	code, _ = do(t, http.MethodPost, s.URL+"/batches", strings.NewReader(`{"input_file_id":"x","endpoint":"/v1/chat/completions","completion_window":"24h"}`), "application/json")
	if code != 500 {
		t.Errorf("CreateStatus: %d", code)
	}
}
