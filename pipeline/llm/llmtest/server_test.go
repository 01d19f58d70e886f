package llmtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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

// A lean log keeps each call's timing, rule, status and key, not the
// request itself; rules still see the whole request.
func TestLeanLog(t *testing.T) {
	s := llmtest.New(t, llmtest.Options{Lean: true})
	s.Add(llmtest.Rule{Name: "sys", SystemContains: "judge", Reply: llmtest.Reply{Content: "A"}})
	if code := postKey(t, s.URL, "k1", `{"model":"m","messages":[{"role":"system","content":"you judge"},{"role":"user","content":"q"}]}`); code != 200 {
		t.Fatalf("status %d", code)
	}
	calls := s.Calls()
	if len(calls) != 1 {
		t.Fatalf("log of %d calls", len(calls))
	}
	c := calls[0]
	if c.Rule != "sys" || c.Status != 200 || c.Key != "k1" || c.Nth != 1 || c.Time.IsZero() || c.End.Before(c.Time) || c.PromptHash == "" {
		t.Errorf("lean log lost what it keeps: %+v", c)
	}
	if c.Body != nil || c.Header != nil || len(c.Request.Messages) != 0 {
		t.Errorf("lean log kept the request: %+v", c)
	}
}

func postKey(t *testing.T, url, key, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/chat/completions", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(llmtest.KeyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1 // a reset
	}
	resp.Body.Close()
	return resp.StatusCode
}

func chaos() *llmtest.Chaos {
	return &llmtest.Chaos{Seed: 5, Faults: []llmtest.ChaosFault{
		{P: 0.3, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 429}},
		{P: 0.2, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 503, Headers: map[string]string{"Retry-After": "1"}}},
		{P: 0.1, Fault: llmtest.Fault{Kind: llmtest.Garbled}},
	}}
}

// fates sends three attempts of each of n requests, in the given order of
// requests, and returns the status of each (request, attempt).
func fates(t *testing.T, order []int) map[[2]int]int {
	t.Helper()
	s := llmtest.New(t, llmtest.Options{Chaos: chaos()})
	out := map[[2]int]int{}
	for attempt := range 3 {
		for _, i := range order {
			out[[2]int{i, attempt}] = postKey(t, s.URL, fmt.Sprint("key-", i), `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
		}
	}
	calls := s.Calls()
	if len(calls) != 3*len(order) || calls[len(calls)-1].Nth != 3 {
		t.Fatalf("log %d calls, last nth %d", len(calls), calls[len(calls)-1].Nth)
	}
	return out
}

func TestChaosIsPerRequestAndSeeded(t *testing.T) {
	forward := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	backward := make([]int, len(forward))
	for i, v := range forward {
		backward[len(forward)-1-i] = v
	}
	a, b := fates(t, forward), fates(t, backward)
	faulted := 0
	for k, v := range a {
		if b[k] != v {
			t.Errorf("request %d attempt %d: %d in one order, %d in the other", k[0], k[1], v, b[k])
		}
		if v != 200 {
			faulted++
		}
	}
	if faulted == 0 || faulted == len(a) {
		t.Errorf("%d of %d arrivals faulted", faulted, len(a))
	}
}

func TestChaosCapAndFaultKinds(t *testing.T) {
	var log bytes.Buffer
	s := llmtest.New(t, llmtest.Options{ArrivalLog: &log, Chaos: &llmtest.Chaos{Seed: 1, MaxPerRequest: 2, Faults: []llmtest.ChaosFault{
		{P: 1, Fault: llmtest.Fault{Kind: llmtest.Malformed}},
	}}})
	body := `{"model":"m","messages":[{"role":"user","content":"q"}]}`
	for range 3 {
		postKey(t, s.URL, "k", body)
	}
	calls := s.Calls()
	if calls[0].Fault != llmtest.Malformed || calls[1].Fault != llmtest.Malformed || calls[2].Fault != llmtest.NoFault {
		t.Errorf("faults %v %v %v: want two malformed, then an answer", calls[0].Fault, calls[1].Fault, calls[2].Fault)
	}
	if calls[0].Key != "k" || calls[2].Nth != 3 || calls[0].PromptHash != calls[2].PromptHash || calls[0].End.Before(calls[0].Time) {
		t.Errorf("log %+v", calls[0])
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("arrival log has %d lines", len(lines))
	}
	var a llmtest.Arrival
	if err := json.Unmarshal([]byte(lines[0]), &a); err != nil || a.Key != "k" || a.Nth != 1 || a.Fault != "malformed" || a.PromptHash != calls[0].PromptHash {
		t.Errorf("arrival %+v, %v", a, err)
	}
}

func TestHoldKeepsARequestInFlight(t *testing.T) {
	s := llmtest.New(t, llmtest.Options{})
	hold := make(chan struct{})
	s.Add(llmtest.Rule{Name: "held", Hold: hold, Reply: llmtest.Reply{Content: "late"}})
	done := make(chan int)
	go func() { done <- post(t, s.URL, `{"model":"m","messages":[{"role":"user","content":"q"}]}`) }()
	select {
	case <-done:
		t.Fatal("a held request was answered")
	default:
	}
	close(hold)
	if code := <-done; code != 200 {
		t.Errorf("status %d", code)
	}
}

// TestLatencyDelaysAnswersNotFaults checks Options.Latency: an answer waits
// at least that long; a fault is not delayed by it (with an hour's latency,
// a delayed fault would outlast the client's timeout).
func TestLatencyDelaysAnswersNotFaults(t *testing.T) {
	s := llmtest.New(t, llmtest.Options{Latency: 200 * time.Millisecond})
	s.Fail(llmtest.FirstN(1), llmtest.Fault{Kind: llmtest.Status, Status: 500})
	if code := post(t, s.URL, `{"model":"m","messages":[{"role":"user","content":"q"}]}`); code != 500 {
		t.Fatalf("first request: status %d, want the fault's 500", code)
	}
	if code := post(t, s.URL, `{"model":"m","messages":[{"role":"user","content":"q"}]}`); code != 200 {
		t.Fatalf("second request: status %d, want 200", code)
	}
	calls := s.Calls()
	if d := calls[1].End.Sub(calls[1].Time); d < 200*time.Millisecond {
		t.Errorf("the answer took %v, want at least the server's latency", d)
	}

	slow := llmtest.New(t, llmtest.Options{Latency: time.Hour})
	slow.Fail(llmtest.Always(), llmtest.Fault{Kind: llmtest.Status, Status: 503})
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Post(slow.URL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"q"}]}`))
	if err != nil {
		t.Fatalf("a fault waited for the answers' latency: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("status %d, want 503", resp.StatusCode)
	}
}

// TestChaosFaultMatch checks that a chaos fault with a Match hits only the
// requests it matches, and that the others get no fault in its share.
func TestChaosFaultMatch(t *testing.T) {
	s := llmtest.New(t, llmtest.Options{Chaos: &llmtest.Chaos{Seed: 1, Faults: []llmtest.ChaosFault{
		{P: 1, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 500}, Match: func(r llmtest.ChatRequest) bool { return strings.Contains(r.Last(), "parse") }},
	}}})
	for i := range 4 {
		if code := postKey(t, s.URL, fmt.Sprint("free-", i), `{"model":"m","messages":[{"role":"user","content":"q"}]}`); code != 200 {
			t.Errorf("an unmatched request got %d", code)
		}
		if code := postKey(t, s.URL, fmt.Sprint("hit-", i), `{"model":"m","messages":[{"role":"user","content":"parse me"}]}`); code != 500 {
			t.Errorf("a matched request got %d, want the fault's 500", code)
		}
	}
}

// TestDoorsTellWhoseARequestWas: requests through each door are logged
// with its number, those through URL with 0; every door is served alike
// (rules, faults, the log) and closed with the server.
func TestDoorsTellWhoseARequestWas(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{})
	srv.Reply("hello", "hi")
	body := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	var urls []string
	for range 2 {
		url, door, err := srv.Door()
		if err != nil {
			t.Fatal(err)
		}
		if door != len(urls)+1 {
			t.Fatalf("door %d, want %d", door, len(urls)+1)
		}
		urls = append(urls, url)
	}
	for _, url := range []string{urls[1], srv.URL, urls[0], urls[1]} {
		if code := post(t, url, body); code != http.StatusOK {
			t.Fatalf("%s: status %d", url, code)
		}
	}
	var doors []int
	for _, c := range srv.Calls() {
		doors = append(doors, c.Door)
	}
	if fmt.Sprint(doors) != "[2 0 1 2]" {
		t.Errorf("doors logged %v, want [2 0 1 2]", doors)
	}
	srv.Close()
	if _, err := http.Post(urls[0]+"/chat/completions", "application/json", strings.NewReader(body)); err == nil {
		t.Error("a door still answered after Close")
	}
}
