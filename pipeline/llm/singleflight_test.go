package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// stallingCache is a MemCache whose first Get reads the store and then
// waits for the test before returning what it read: a call that saw a miss
// just before an identical call stored its answer.
type stallingCache struct {
	*llm.MemCache
	read    chan struct{} // closed once the first Get has read
	release chan struct{} // the first Get returns once this is closed

	mu   sync.Mutex
	gets int
}

func (c *stallingCache) Get(ctx context.Context, key string) (llm.CachedResponse, bool, error) {
	r, ok, err := c.MemCache.Get(ctx, key)
	c.mu.Lock()
	c.gets++
	first := c.gets == 1
	c.mu.Unlock()
	if first {
		close(c.read)
		<-c.release
	}
	return r, ok, err
}

// This is the interleaving behind "the server got 215 requests, want 214
// distinct prompts": a call reads the cache (miss), an identical call then
// sends, stores its answer and leaves the flight, and only then does the
// first call join. Finding no flight, it used to lead a new one and pay
// for the same answer again.
func TestCallThatMissedTheCacheJustBeforeAnIdenticalCallStoredDoesNotPayAgain(t *testing.T) {
	sc := &stallingCache{MemCache: llm.NewMemCache(), read: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "paid once"}}, nil, func(o *llm.Options) { o.Cache = sc })
	ctx := testCtx(t, 10*time.Second)

	type result struct {
		resp llm.Response
		err  error
	}
	late := make(chan result, 1)
	go func() {
		r, err := h.client.Call(ctx, userReq("same question"))
		late <- result{r, err}
	}()
	<-sc.read // the late call has seen the miss and is held before joining

	first, err := h.client.Call(ctx, userReq("same question"))
	if err != nil {
		t.Fatal(err)
	}
	if first.FromCache || h.srv.Count() != 1 || sc.Len() != 1 {
		t.Fatalf("first call: from cache %v, %d requests, %d cached; want a paid call", first.FromCache, h.srv.Count(), sc.Len())
	}
	close(sc.release)
	got := <-late
	if got.err != nil {
		t.Fatal(got.err)
	}
	if n := h.srv.Count(); n != 1 {
		t.Errorf("the server got %d requests for one prompt, want 1", n)
	}
	if !got.resp.FromCache || got.resp.Text != "paid once" || got.resp.CostUSD != 0 {
		t.Errorf("late call = %+v, want the stored answer at no cost", got.resp)
	}
	tot := h.rec.Total()
	if tot.Calls != 2 || tot.CacheHits != 1 {
		t.Errorf("records: %d calls, %d cache hits; want 2 and 1", tot.Calls, tot.CacheHits)
	}
}

// startFollowers starts n identical calls and returns once the first leads
// a flight and the other n-1 wait on it, with a channel of their errors.
func startFollowers(t *testing.T, h *harness, ctx context.Context, n int) (leader context.CancelFunc, errs chan error) {
	t.Helper()
	waiting := make(chan struct{}, n)
	llm.SetFollowHook(h.client, func(string) { waiting <- struct{}{} })
	lctx, cancel := context.WithCancel(ctx)
	errs = make(chan error, n)
	go func() {
		_, err := h.client.Call(lctx, userReq("same question"))
		errs <- err
	}()
	for range n - 1 {
		go func() {
			_, err := h.client.Call(ctx, userReq("same question"))
			errs <- err
		}()
	}
	for range n - 1 {
		<-waiting
	}
	return cancel, errs
}

func TestFollowersShareTheLeadersRejection(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, nil)
	hold := make(chan struct{})
	h.srv.Add(llmtest.Rule{Name: "held 400", Hold: hold, Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400, Message: "prompt too long"}})
	ctx := testCtx(t, 10*time.Second)
	_, errs := startFollowers(t, h, ctx, 4)
	close(hold)
	for range 4 {
		err := <-errs
		var ce *llm.CallError
		if !errors.As(err, &ce) || ce.Status != 400 {
			t.Errorf("err = %v, want the leader's 400", err)
		}
		if _, unit := llm.UnitFailure(err); !unit {
			t.Errorf("%v is not a unit failure", err)
		}
	}
	if n := h.srv.Count(); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
	if tot := h.rec.Total(); tot.Calls != 4 || tot.Failed != 4 || tot.Attempts != 1 {
		t.Errorf("records %+v, want 4 failed calls and 1 attempt", tot)
	}
}

func TestFollowerTakesOverWhenTheLeaderGivesUp(t *testing.T) {
	h := newHarness(t, llmtest.Options{Default: llmtest.Reply{Content: "answered"}}, nil, nil)
	hold := make(chan struct{}) // never closed: the first request waits until its caller leaves
	arrived := make(chan struct{})
	var once sync.Once
	h.srv.Add(llmtest.Rule{Name: "held", When: llmtest.FirstN(1), Hold: hold, Match: func(llmtest.ChatRequest) bool {
		once.Do(func() { close(arrived) })
		return true
	}})
	ctx := testCtx(t, 10*time.Second)
	cancelLeader, errs := startFollowers(t, h, ctx, 2)
	<-arrived
	cancelLeader()
	var got []error
	for range 2 {
		got = append(got, <-errs)
	}
	canceled, ok := 0, 0
	for _, err := range got {
		switch {
		case errors.Is(err, context.Canceled):
			canceled++
		case err == nil:
			ok++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if canceled != 1 || ok != 1 {
		t.Errorf("errors %v: want the leader cancelled and the follower answered", got)
	}
	if n := h.srv.Count(); n != 2 {
		t.Errorf("the server got %d requests, want 2 (the abandoned one and the follower's)", n)
	}
}

func TestRequestsCarryTheirCacheKey(t *testing.T) {
	h := newHarness(t, llmtest.Options{}, nil, nil)
	ctx := testCtx(t, 5*time.Second)
	req := userReq("q")
	if _, err := h.client.Call(ctx, req); err != nil {
		t.Fatal(err)
	}
	key, err := h.client.Key(req)
	if err != nil {
		t.Fatal(err)
	}
	c := h.srv.Calls()[0]
	if c.Key != key || c.Header.Get(llm.RequestKeyHeader) != key || llmtest.KeyHeader != llm.RequestKeyHeader {
		t.Errorf("server logged key %q, want %q", c.Key, key)
	}
	if c.Nth != 1 || len(c.PromptHash) != 64 {
		t.Errorf("nth %d, prompt hash %q", c.Nth, c.PromptHash)
	}
}
