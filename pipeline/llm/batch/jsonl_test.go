package batch_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/batch"
)

func TestInputLine(t *testing.T) {
	key := strings.Repeat("ab", 32)
	tests := []struct {
		body string
		ok   bool
	}{
		{`{"model":"m","messages":[{"role":"user","content":"hi \"there\"\n"}]}`, true},
		{"{\n  \"model\": \"m\"\n}", true},
		{`[1,2]`, false},
		{`{"model":`, false},
		{``, false},
	}
	for _, tc := range tests {
		line, err := batch.AppendInputLine(nil, key, []byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v", tc.body, err)
			continue
		}
		if !tc.ok {
			continue
		}
		var in batch.InputLine
		if err := json.Unmarshal(line, &in); err != nil || in.CustomID != key || in.Method != "POST" || in.URL != batch.ChatURL || !json.Valid(in.Body) {
			t.Errorf("%q: line %s: %+v %v", tc.body, line, in, err)
		}
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Errorf("%q: line %q is not one line", tc.body, line)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, []byte(tc.body))
		if got := batch.LineSize(key, compact.Len()); got != int64(len(line)) {
			t.Errorf("%q: LineSize %d, line is %d bytes", tc.body, got, len(line))
		}
	}
}

func TestParseResult(t *testing.T) {
	tests := []struct {
		name, line string
		ok         bool
		status     int
		reason     string
	}{
		{"answer", `{"id":"r","custom_id":"k","response":{"status_code":200,"body":{"choices":[]}},"error":null}`, true, 200, ""},
		{"error answer", `{"custom_id":"k","response":{"status_code":400,"body":{"error":{"message":"bad"}}}}`, true, 400, "status 400: bad"},
		{"expired", `{"custom_id":"k","response":null,"error":{"code":"batch_expired","message":"too late"}}`, true, 0, "batch_expired: too late"},
		{"numeric code", `{"custom_id":"k","error":{"code":7,"message":"x"}}`, true, 0, "7: x"},
		{"no custom_id", `{"response":{"status_code":200,"body":{}}}`, false, 0, ""},
		{"empty custom_id", `{"custom_id":"","response":{"status_code":200,"body":{}}}`, false, 0, ""},
		{"neither", `{"custom_id":"k"}`, false, 0, ""},
		{"200 without body", `{"custom_id":"k","response":{"status_code":200}}`, false, 0, ""},
		{"bad status", `{"custom_id":"k","response":{"status_code":42,"body":{}}}`, false, 0, ""},
		{"not json", `custom_id`, false, 0, ""},
		{"custom_id not a string", `{"custom_id":5,"response":{"status_code":200,"body":{}}}`, false, 0, ""},
	}
	for _, tc := range tests {
		r, err := batch.ParseResult([]byte(tc.line))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
			continue
		}
		if tc.ok && (r.CustomID != "k" || r.Status != tc.status || r.Reason() != tc.reason) {
			t.Errorf("%s: %+v reason %q", tc.name, r, r.Reason())
		}
	}
}

func TestReadResults(t *testing.T) {
	in := `{"custom_id":"a","response":{"status_code":200,"body":{}}}` + "\n\n" + `oops` + "\n" + `{"custom_id":"b","error":{"code":"x","message":"y"}}`
	var got []string
	err := batch.ReadResults(strings.NewReader(in), func(line int, r batch.Result, err error) error {
		if err != nil {
			got = append(got, "bad@"+string(rune('0'+line)))
			return nil
		}
		got = append(got, r.CustomID+"@"+string(rune('0'+line)))
		return nil
	})
	if err != nil || strings.Join(got, ",") != "a@1,bad@3,b@4" {
		t.Errorf("got %v %v", got, err)
	}
}

func FuzzParseResult(f *testing.F) {
	for _, s := range []string{
		`{"id":"r","custom_id":"k","response":{"status_code":200,"body":{"choices":[]}},"error":null}`,
		`{"custom_id":"k","response":null,"error":{"code":"batch_expired","message":"too late"}}`,
		`{"custom_id":"k","response":{"status_code":500,"body":"oops"}}`,
		`{}`, `null`, `[]`, `{"custom_id":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := batch.ParseResult(line)
		if err != nil {
			return
		}
		if r.CustomID == "" {
			t.Fatalf("accepted %q without a custom_id", line)
		}
		if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
			t.Fatalf("accepted %q with status %d", line, r.Status)
		}
		if r.OK() && len(r.Body) == 0 {
			t.Fatalf("accepted %q: a 200 without a body", line)
		}
		_ = r.Reason()
	})
}
