package batch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/batch"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// env is a run in batch mode against a test server: a run file, a client
// whose endpoint is in batch mode and queues in that run file, and the
// options for a driver.
type env struct {
	t    *testing.T
	srv  *llmtest.Server
	path string
	l    *ledger.Ledger
	c    *llm.Client
}

func newEnv(t *testing.T, so llmtest.Options) *env {
	t.Helper()
	e := &env{t: t, srv: llmtest.New(t, so), path: filepath.Join(t.TempDir(), "run.db")}
	e.srv.Add(llmtest.Rule{Name: "echo", Func: func(r llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Content: "answer to " + r.Last(), Usage: &llmtest.Usage{Prompt: 100, Completion: 10}}
	}})
	e.open()
	return e
}

// open opens the run file and builds a client, as a new process would.
func (e *env) open() {
	e.t.Helper()
	l, err := ledger.Open(context.Background(), e.path, ledger.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.l = l
	e.t.Cleanup(func() { l.Close() })
	c, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{Name: "ep", BaseURL: e.srv.URL, Model: "m", Mode: llm.ModeBatch, Timeout: 5 * time.Second,
			Price: llm.Price{Input: 2, Output: 4}}},
		Cache: l.LLMCache(), Recorder: l.LLMRecorder(), Deferrer: l.BatchQueue(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.c = c
}

// kill closes the run file as a dying process would leave it.
func (e *env) kill() {
	e.l.Close()
	e.open()
}

func (e *env) driver(o batch.Options) *batch.Driver {
	e.t.Helper()
	o.Client, o.Ledger, o.Poll, o.TempDir = e.c, e.l, time.Millisecond, e.t.TempDir()
	d, err := batch.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func req(i int) llm.Request {
	return llm.Request{Role: "judge", Stage: "judge", Messages: []conv.Message{{Role: conv.User, Content: fmt.Sprintf("question %d", i)}}}
}

// ask calls every request and returns how many were answered, deferred and
// failed.
func (e *env) ask(n int) (answered, deferred, failed int) {
	e.t.Helper()
	for i := range n {
		resp, err := e.c.Call(context.Background(), req(i))
		switch {
		case err == nil:
			if resp.Text != fmt.Sprintf("answer to question %d", i) {
				e.t.Fatalf("request %d answered %q", i, resp.Text)
			}
			answered++
		case errors.Is(err, llm.ErrDeferred):
			deferred++
		default:
			if _, unit := llm.UnitFailure(err); !unit {
				e.t.Fatalf("request %d: %v", i, err)
			}
			failed++
		}
	}
	return
}

// sentOnce checks that no request reached the server twice, in batches or
// online.
func (e *env) sentOnce() {
	e.t.Helper()
	seen := map[string]int{}
	for _, c := range e.srv.Calls() {
		seen[c.PromptHash]++
		if seen[c.PromptHash] > 1 {
			e.t.Fatalf("%q was answered %d times", c.Request.Last(), seen[c.PromptHash])
		}
	}
}

func (e *env) paidCalls() int64 {
	e.t.Helper()
	st, err := e.l.Status(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	var n int64
	for _, u := range st.LLM {
		n += u.Calls - u.CacheHits
	}
	return n
}

func TestDriverRoundTrip(t *testing.T) {
	e := newEnv(t, llmtest.Options{Batch: llmtest.BatchOptions{Polls: 2}})
	if a, d, _ := e.ask(5); a != 0 || d != 5 {
		t.Fatalf("first pass: %d answered, %d deferred", a, d)
	}
	if a, d, _ := e.ask(5); a != 0 || d != 5 {
		t.Fatalf("second pass before the batch: %d answered, %d deferred", a, d)
	}
	if e.srv.Count() != 0 {
		t.Fatal("batch mode sent requests online")
	}
	d := e.driver(batch.Options{MaxRequests: 2})
	if err := d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(e.srv.Batches()); got != 3 {
		t.Fatalf("%d batches for 5 requests at 2 per batch", got)
	}
	if a, d, _ := e.ask(5); a != 5 || d != 0 {
		t.Fatalf("after the batches: %d answered, %d deferred", a, d)
	}
	e.sentOnce()
	if n := e.paidCalls(); n != 5 {
		t.Errorf("%d paid calls recorded, want 5", n)
	}
	// Half price: 100 prompt tokens at $1/M and 10 completion at $2/M.
	spent, _ := e.l.SpendUSD(context.Background())
	if want := 5 * (100*1.0 + 10*2.0) / 1e6; spent < want*0.999 || spent > want*1.001 {
		t.Errorf("spent $%g, want $%g at the batch price", spent, want)
	}
	bs, _ := e.l.Batches(context.Background(), false)
	for _, b := range bs {
		if b.State != ledger.BatchImported || b.RemoteStatus != "completed" || b.Imported != b.Requests {
			t.Errorf("batch %+v", b)
		}
	}
	// Nothing left: another round does nothing.
	if err := d.Run(context.Background()); err != nil || len(e.srv.Batches()) != 3 {
		t.Fatalf("idle round: %v, %d batches", err, len(e.srv.Batches()))
	}
}

func TestDriverSplitsBySize(t *testing.T) {
	e := newEnv(t, llmtest.Options{})
	e.ask(4)
	key, body, err := e.c.RequestBody(req(0))
	if err != nil {
		t.Fatal(err)
	}
	one := batch.LineSize(key, len(body))
	if err := e.driver(batch.Options{MaxBytes: 2*one + 1}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	bs := e.srv.Batches()
	if len(bs) != 2 {
		t.Fatalf("%d batches, want 2 of at most 2 lines", len(bs))
	}
	for _, b := range bs {
		in, _ := e.srv.FileContent(b.InputFile)
		if int64(len(in)) > 2*one+1 {
			t.Errorf("input file of %d bytes over the %d limit", len(in), 2*one+1)
		}
	}
}

func TestDriverKilledAtEachStep(t *testing.T) {
	errKill := errors.New("killed")
	tests := []struct {
		point string
		nth   int // killed at the nth time the point is reached
		files int // input files uploaded in all
	}{
		{"uploaded", 1, 2},
		{"created", 1, 1},
		{"polled", 2, 1},
		{"imported", 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.point, func(t *testing.T) {
			e := newEnv(t, llmtest.Options{Batch: llmtest.BatchOptions{Polls: 2}})
			e.ask(4)
			o := batch.Options{}
			n := 0
			batch.SetHook(&o, func(p string) error {
				if p == tc.point {
					n++
					if n == tc.nth {
						return errKill
					}
				}
				return nil
			})
			if err := e.driver(o).Run(context.Background()); !errors.Is(err, errKill) {
				t.Fatalf("first run: %v, want the kill", err)
			}
			e.kill()
			if a, _, _ := e.ask(4); a > 0 && tc.point != "imported" {
				t.Fatalf("%d answered before the batch was imported", a)
			}
			if err := e.driver(batch.Options{}).Run(context.Background()); err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			if a, d, f := e.ask(4); a != 4 {
				t.Fatalf("after resuming: %d answered, %d deferred, %d failed", a, d, f)
			}
			e.sentOnce()
			if got := len(e.srv.Batches()); got != 1 {
				t.Errorf("%d batches created, want 1", got)
			}
			if got := e.srv.Files(); got != tc.files {
				t.Errorf("%d files uploaded, want %d", got, tc.files)
			}
			if n := e.paidCalls(); n != 4 {
				t.Errorf("%d paid calls recorded, want 4 (each answer imported once)", n)
			}
		})
	}
}

func TestDriverLeftovers(t *testing.T) {
	tests := []struct {
		name     string
		opts     llmtest.BatchOptions
		fallback string
		reject   bool // the endpoint rejects question 1 with a 400
		rounds   int
		// after the rounds: answered (from batches or online), failed
		answered, failed, online int
	}{
		{name: "expired, resubmitted", opts: llmtest.BatchOptions{ExpireAfter: 2}, fallback: batch.FallbackResubmit, rounds: 2, answered: 4},
		{name: "expired, sent online", opts: llmtest.BatchOptions{ExpireAfter: 2}, fallback: batch.FallbackOnline, rounds: 1, answered: 4, online: 2},
		{name: "failed batch, resubmitted until the limit", opts: llmtest.BatchOptions{Fail: "no"}, fallback: batch.FallbackResubmit, rounds: 3, failed: 4},
		{name: "rejected request fails its unit", fallback: batch.FallbackResubmit, reject: true, rounds: 1, answered: 3, failed: 1},
		{name: "rejected request sent online fails there", fallback: batch.FallbackOnline, reject: true, rounds: 1, answered: 3, failed: 1, online: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Rules answer in the order added: the rejection comes before
			// the echo, so the server is built here rather than by newEnv.
			srv := llmtest.New(t, llmtest.Options{Batch: tc.opts})
			if tc.reject {
				srv.Add(llmtest.Rule{Name: "reject", LastContains: "question 1", Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "bad input"}})
			}
			e := newEnv(t, llmtest.Options{})
			e.srv = srv
			e.srv.Add(llmtest.Rule{Name: "echo", Func: func(r llmtest.ChatRequest) llmtest.Reply {
				return llmtest.Reply{Content: "answer to " + r.Last()}
			}})
			e.kill() // a client bound to srv
			e.ask(4)
			for i := range tc.rounds {
				if err := e.driver(batch.Options{Fallback: tc.fallback, MaxSubmits: 3}).Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				if i < tc.rounds-1 {
					e.ask(4) // the stage's next pass queues what was requeued
				}
			}
			a, d, f := e.ask(4)
			if a != tc.answered || f != tc.failed || d != 0 {
				t.Fatalf("%d answered, %d deferred, %d failed; want %d answered, %d failed", a, d, f, tc.answered, tc.failed)
			}
			online := 0
			for _, c := range e.srv.Calls() {
				if c.Batch == "" {
					online++
				}
			}
			if online != tc.online {
				t.Errorf("%d requests sent online, want %d", online, tc.online)
			}
			counts, _ := e.l.BatchRequestCounts(context.Background())
			if counts[ledger.ReqQueued]+counts[ledger.ReqSubmitted] != 0 {
				t.Errorf("requests still waiting: %v", counts)
			}
			if tc.failed > 0 && !strings.Contains(fmt.Sprint(counts), "failed") && tc.fallback == batch.FallbackResubmit {
				t.Errorf("no failed requests recorded: %v", counts)
			}
		})
	}
}

func TestDriverCancel(t *testing.T) {
	e := newEnv(t, llmtest.Options{Batch: llmtest.BatchOptions{Polls: 100}})
	e.ask(3)
	d := e.driver(batch.Options{Fallback: batch.FallbackResubmit})
	if n, err := d.Submit(context.Background()); err != nil || n != 1 {
		t.Fatalf("Submit: %d %v", n, err)
	}
	n, err := d.Cancel(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("Cancel: %d %v", n, err)
	}
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	bs, _ := e.l.Batches(context.Background(), false)
	if len(bs) != 1 || bs[0].RemoteStatus != "cancelled" || bs[0].State != ledger.BatchImported {
		t.Fatalf("batches %+v", bs)
	}
	counts, _ := e.l.BatchRequestCounts(context.Background())
	if counts[ledger.ReqQueued] != 3 {
		t.Errorf("cancelled requests not queued again: %v", counts)
	}
}

func TestDriverStop(t *testing.T) {
	e := newEnv(t, llmtest.Options{Batch: llmtest.BatchOptions{Polls: 1000}})
	e.ask(2)
	stop := make(chan struct{})
	close(stop)
	d := e.driver(batch.Options{Stop: stop})
	if err := d.Run(context.Background()); !errors.Is(err, batch.ErrStopped) {
		t.Fatalf("Run: %v, want ErrStopped", err)
	}
	bs, _ := e.l.Batches(context.Background(), true)
	if len(bs) != 1 || bs[0].State != ledger.BatchSubmitted || bs[0].RemoteID == "" {
		t.Fatalf("live batches %+v", bs)
	}
}

// TestDriverPollWaits checks the waits the driver asks for between polls:
// short at first, doubling up to Poll, and none after the poll that finds
// the last batch over (its answers are imported at once). The test server
// counts polls, not time, and the waits are recorded, not slept.
func TestDriverPollWaits(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name      string
		polls     int // polls that see the batches in progress
		poll      time.Duration
		firstPoll time.Duration
		want      []time.Duration
	}{
		{name: "over at the first poll", polls: 0, poll: 30 * s, want: nil},
		{name: "over at the second poll", polls: 1, poll: 30 * s, want: []time.Duration{2 * s}},
		{name: "doubling up to the poll setting", polls: 7, poll: 30 * s,
			want: []time.Duration{2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s}},
		{name: "a poll setting under the first wait", polls: 3, poll: time.Second / 2,
			want: []time.Duration{s / 2, s / 2, s / 2}},
		{name: "a first wait of its own", polls: 4, poll: 10 * s, firstPoll: s,
			want: []time.Duration{s, 2 * s, 4 * s, 8 * s}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, llmtest.Options{Batch: llmtest.BatchOptions{Polls: tc.polls}})
			e.ask(5)
			var waits []time.Duration
			o := batch.Options{Client: e.c, Ledger: e.l, MaxRequests: 2, Poll: tc.poll, FirstPoll: tc.firstPoll, TempDir: t.TempDir()}
			batch.SetSleep(&o, func(w time.Duration) {
				// Every batch is polled before each wait: none is over
				// and left unimported while the driver waits.
				bs, _ := e.l.Batches(context.Background(), true)
				for _, b := range bs {
					if b.State == ledger.BatchEnded {
						t.Errorf("batch %d is over but waits to be imported", b.ID)
					}
				}
				waits = append(waits, w)
			})
			d, err := batch.New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(waits, tc.want) {
				t.Errorf("waits %v, want %v", waits, tc.want)
			}
			if got := len(e.srv.Batches()); got != 3 {
				t.Errorf("%d batches, want 3", got)
			}
			if a, d, _ := e.ask(5); a != 5 || d != 0 {
				t.Errorf("after the round: %d answered, %d deferred", a, d)
			}
		})
	}
}
