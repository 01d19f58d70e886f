package llmtest_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

func post(t *testing.T, url, body string) int {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestSchedules(t *testing.T) {
	count := func(s llmtest.Schedule, n int) int {
		k := 0
		for i := 1; i <= n; i++ {
			if s(i) {
				k++
			}
		}
		return k
	}
	if count(llmtest.FirstN(3), 10) != 3 || count(llmtest.EveryK(4), 20) != 5 || count(llmtest.Always(), 7) != 7 {
		t.Error("schedule counts are off")
	}
	if k := count(llmtest.Fraction(0.2, 1), 10000); k < 1800 || k > 2200 {
		t.Errorf("Fraction(0.2) fired %d of 10000", k)
	}
	if count(llmtest.Fraction(0.2, 1), 500) != count(llmtest.Fraction(0.2, 1), 500) {
		t.Error("Fraction is not reproducible")
	}
}

func TestServerRulesLogAndLimit(t *testing.T) {
	s := llmtest.New(t, llmtest.Options{Limit: 3, Window: time.Hour})
	s.Fail(llmtest.FirstN(1), llmtest.Fault{Kind: llmtest.Status, Status: 503})
	s.Add(llmtest.Rule{Name: "sys", SystemContains: "judge", Reply: llmtest.Reply{Content: "A"}})
	body := `{"model":"m","messages":[{"role":"system","content":"you judge"},{"role":"user","content":"q"}]}`
	codes := []int{post(t, s.URL, body), post(t, s.URL, body), post(t, s.URL, body), post(t, s.URL, body)}
	if codes[0] != 503 || codes[1] != 200 || codes[2] != 200 || codes[3] != 429 {
		t.Errorf("codes %v", codes)
	}
	calls := s.Calls()
	if len(calls) != 4 || calls[1].Rule != "sys" || calls[1].Request.System() != "you judge" || calls[1].Request.Last() != "q" {
		t.Errorf("log %+v", calls)
	}
	if s.Violations() != 1 || s.MaxInWindow(time.Hour) != 4 || s.MaxInWindow(time.Nanosecond) != 1 {
		t.Errorf("violations %d, windows %d %d", s.Violations(), s.MaxInWindow(time.Hour), s.MaxInWindow(time.Nanosecond))
	}
	s.Reset()
	if s.Count() != 0 {
		t.Error("Reset kept the log")
	}
}
