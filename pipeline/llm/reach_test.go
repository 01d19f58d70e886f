package llm_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// closedAddr returns host:port where nothing listens: a port the kernel
// gave out and that was closed again.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// unreachableClient is a client of one endpoint at base that gives up after
// limit without an answer, with quick backoff, recording events.
func unreachableClient(t *testing.T, base string, limit time.Duration, maxAttempts int) (*llm.Client, *llm.MemRecorder, *eventLog) {
	t.Helper()
	rec, ev := llm.NewMemRecorder(), &eventLog{}
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "test", BaseURL: base, APIKey: testKey, APIKeyEnv: "TEST_API_KEY", Model: "m",
			Timeout: 5 * time.Second, MaxAttempts: maxAttempts, Limits: llm.Limits{Unreachable: limit}}},
		Recorder:    rec,
		BackoffBase: 10 * time.Millisecond,
		BackoffMax:  50 * time.Millisecond,
		OnEvent:     ev.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, rec, ev
}

type eventLog struct {
	mu     sync.Mutex
	events []llm.Event
	// notify, when set, receives every event's kind without blocking.
	notify chan llm.EventKind
}

func (l *eventLog) add(e llm.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	n := l.notify
	l.mu.Unlock()
	if n != nil {
		select {
		case n <- e.Kind:
		default:
		}
	}
}

func (l *eventLog) count(k llm.EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func (l *eventLog) all() []llm.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]llm.Event(nil), l.events...)
}

// TestUnreachableEndpointIsFatalAfterItsTime: a name that does not
// resolve, a refused connection and a failed TLS handshake are retried
// (beyond MaxAttempts) until the endpoint has been unreachable for
// Limits.Unreachable, then fail the call with an *UnreachableError (fatal)
// that names the base URL without its credentials or query, the cause and
// what to check; records and events do not carry the URL; and every later
// call fails at once.
func TestUnreachableEndpointIsFatalAfterItsTime(t *testing.T) {
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	tlsSrv.StartTLS()                                   // with a certificate no client trusts
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	refused := closedAddr(t)
	tests := []struct {
		name, base, wantURL, reason, hint string
	}{
		{name: "refused", base: "http://user:s3cret@" + refused + "/v1?token=s3cret", wantURL: "http://" + refused + "/v1",
			reason: "connection refused", hint: "check that the server is up"},
		{name: "no such host", base: "http://nothing.invalid/v1", wantURL: "http://nothing.invalid/v1",
			reason: "nothing.invalid", hint: "check the host name in the base URL and DNS"},
		{name: "untrusted certificate", base: tlsSrv.URL + "/v1", wantURL: tlsSrv.URL + "/v1",
			reason: "TLS", hint: "certificate"},
		{name: "https to a plain server", base: strings.Replace(plain.URL, "http:", "https:", 1) + "/v1",
			wantURL: strings.Replace(plain.URL, "http:", "https:", 1) + "/v1", reason: "plain HTTP", hint: "use http://"},
	}
	const limit = 300 * time.Millisecond
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, rec, ev := unreachableClient(t, tc.base, limit, 2)
			start := time.Now()
			_, err := c.Call(testCtx(t, time.Minute), userReq("hello"))
			took := time.Since(start)
			var ue *llm.UnreachableError
			if !errors.As(err, &ue) || !llm.IsFatal(err) {
				t.Fatalf("err = %v (%T), want a fatal *UnreachableError", err, err)
			}
			msg := err.Error()
			for _, want := range []string{"endpoint test", tc.wantURL, tc.reason, tc.hint} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "s3cret") || strings.Contains(msg, "\n") {
				t.Errorf("error %q shows a credential or spans lines", msg)
			}
			if ue.For < limit || took < limit {
				t.Errorf("gave up after %v (error says %v), before the limit %v", took, ue.For, limit)
			}
			if n := ev.count(llm.EventRetry); n < 2 {
				t.Errorf("%d retries before giving up; unreachability must not stop at MaxAttempts (2)", n)
			}
			if ev.count(llm.EventUnreachable) != 1 || ev.count(llm.EventFatal) != 1 || ev.count(llm.EventBreakerOpen) != 0 {
				t.Errorf("events: %+v", ev.all())
			}
			for _, e := range ev.all() {
				if strings.Contains(e.Err, "127.0.0.1") || strings.Contains(e.Err, "://") {
					t.Errorf("event %s carries the URL: %q", e.Kind, e.Err)
				}
			}
			recs := rec.Records()
			if len(recs) != 1 || recs[0].Status != llm.StatusFatal || strings.Contains(recs[0].Error, "://") || !strings.Contains(recs[0].Error, tc.reason) {
				t.Errorf("records: %+v", recs)
			}
			// The endpoint is known to be down: the next call fails at once.
			start = time.Now()
			if _, err := c.Call(testCtx(t, time.Minute), userReq("again")); !errors.As(err, &ue) {
				t.Errorf("second call: %v", err)
			}
			if d := time.Since(start); d > limit {
				t.Errorf("second call took %v; it should fail at once", d)
			}
		})
	}
}

// TestUnreachableEndpointThatComesBack: refused connections do not use up
// MaxAttempts, and a server that starts listening within the endpoint's
// unreachable time answers the call.
func TestUnreachableEndpointThatComesBack(t *testing.T) {
	addr := closedAddr(t)
	c, _, ev := unreachableClient(t, "http://"+addr+"/v1", time.Minute, 2)
	ev.notify = make(chan llm.EventKind, 64)
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(testCtx(t, 2*time.Minute), userReq("hello"))
		done <- err
	}()
	// More refusals than MaxAttempts allows for other failures.
	for retries := 0; retries < 4; {
		select {
		case k := <-ev.notify:
			if k == llm.EventRetry {
				retries++
			}
		case err := <-done:
			t.Fatalf("call ended before the server came back: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("no retries")
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	var answered atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if err := <-done; err != nil {
		t.Fatalf("call after the server came back: %v", err)
	}
	if ev.count(llm.EventFatal) != 0 || answered.Load() != 1 {
		t.Errorf("fatal events %d, requests answered %d", ev.count(llm.EventFatal), answered.Load())
	}
}

// TestBatchAPIFaultsMatchOnline: the batch API stops the run for a bad key
// with the very line an online call gives, and for an endpoint that cannot
// be reached with an *UnreachableError after the endpoint's time.
func TestBatchAPIFaultsMatchOnline(t *testing.T) {
	h := newHarness(t, llmtest.Options{Key: "the-right-key"}, nil, nil)
	_, online := h.client.Call(testCtx(t, time.Minute), userReq("hello"))
	api, err := h.client.BatchAPI("test")
	if err != nil {
		t.Fatal(err)
	}
	_, batch := api.Upload(testCtx(t, time.Minute), "in.jsonl", strings.NewReader("{}\n"))
	var fe *llm.FatalError
	if !errors.As(online, &fe) || !errors.As(batch, &fe) {
		t.Fatalf("online %v, batch %v: want two *FatalError", online, batch)
	}
	if online.Error() != batch.Error() || !strings.Contains(batch.Error(), "401 unauthorized: check TEST_API_KEY") {
		t.Errorf("online %q, batch %q: want the same line naming the key's variable", online, batch)
	}
	if _, err := api.Get(testCtx(t, time.Minute), "batch-1"); !errors.As(err, &fe) {
		t.Errorf("retrieving with a bad key: %v", err)
	}

	c, _, ev := unreachableClient(t, "http://"+closedAddr(t)+"/v1", 300*time.Millisecond, 2)
	api, err = c.BatchAPI("test")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = api.Upload(testCtx(t, time.Minute), "in.jsonl", strings.NewReader("{}\n"))
	var ue *llm.UnreachableError
	if !errors.As(err, &ue) || !llm.IsFatal(err) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("upload to nothing: %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %v, before the endpoint's unreachable time", d)
	}
	if ev.count(llm.EventUnreachable) != 1 {
		t.Errorf("events: %+v", ev.all())
	}
}

// TestFatalStatus: the error lines of a batch that would stop an online run.
func TestFatalStatus(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, nil)
	for _, tc := range []struct {
		status int
		raw    string
		want   string // "" when not fatal
	}{
		{401, "", "401 unauthorized: check TEST_API_KEY"},
		{403, "", "403 forbidden: the key may not use model test-model"},
		{404, "", "404 not found: check the model name test-model"},
		{429, `{"error":{"code":"insufficient_quota"}}`, "billing quota exhausted"},
		{429, `{"error":{"code":"rate_limit_exceeded"}}`, ""},
		{500, "", ""},
		{400, "", ""},
	} {
		err := h.client.FatalStatus("test", tc.status, "", tc.raw)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d: %v, want nil", tc.status, err)
		case tc.want != "" && (err == nil || !llm.IsFatal(err) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d: %v, want a fatal error with %q", tc.status, err, tc.want)
		}
	}
	if err := h.client.FatalStatus("nope", 401, "", ""); err != nil {
		t.Errorf("unknown endpoint: %v", err)
	}
}

// The client must stop waiting when its context ends, even while the
// endpoint is unreachable.
func TestUnreachableWaitEndsWithContext(t *testing.T) {
	c, _, _ := unreachableClient(t, "http://"+closedAddr(t)+"/v1", time.Hour, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, userReq("hello"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's", err)
	}
}
