package llm

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Call statuses in a CallRecord.
const (
	StatusOK     = "ok"     // the server answered
	StatusCached = "cached" // answered from the cache or by an identical call in flight; nothing paid
	StatusFailed = "failed" // a per-unit failure (400/422, attempts exhausted, cancelled)
	StatusFatal  = "fatal"  // a fatal endpoint error (401/403/404, quota)
)

// CallRecord describes one Client.Call: one logical request, however many
// attempts it took. It never holds keys, URLs or message text.
type CallRecord struct {
	Time       time.Time // when the call started
	Role       string
	Stage      string
	Endpoint   string // endpoint name from the configuration
	Model      string // model the server reported, else the configured one
	Key        string // cache key of the request
	Usage      Usage
	CostUSD    float64 // 0 for cache hits
	Latency    time.Duration
	Attempts   int // HTTP attempts sent (0 for cache hits)
	Status     string
	HTTPStatus int    // last HTTP status seen, 0 if none
	Error      string // error text for failed calls
	FromCache  bool
}

// Recorder receives one CallRecord per Client.Call.
//
// Implementations must be safe for concurrent use and should be quick (batch
// writes; Record is called on the caller's goroutine after the response
// arrives). An error from Record is returned to the caller of Call together
// with the valid response. The SQLite implementation stores each record and
// answers sums by role, model and stage for `ac3 status` and the report;
// MemRecorder shows the sums expected.
type Recorder interface {
	Record(ctx context.Context, r CallRecord) error
}

// Totals sums call records. Usage and CostUSD count paid calls only; cache
// hits are counted in Calls and CacheHits but add no tokens or dollars.
type Totals struct {
	Calls     int
	CacheHits int
	Failed    int
	Attempts  int
	Usage     Usage
	CostUSD   float64
}

func (t *Totals) add(r CallRecord) {
	t.Calls++
	t.Attempts += r.Attempts
	if r.FromCache {
		t.CacheHits++
		return
	}
	if r.Status != StatusOK {
		t.Failed++
	}
	t.Usage = t.Usage.Add(r.Usage)
	t.CostUSD += r.CostUSD
}

// GroupKey identifies a group of records in MemRecorder sums.
type GroupKey struct {
	Role  string
	Model string
	Stage string
}

// MemRecorder is an in-memory Recorder that keeps every record and sums them
// per role, model and stage.
type MemRecorder struct {
	mu      sync.Mutex
	records []CallRecord
	groups  map[GroupKey]*Totals
	total   Totals
}

// NewMemRecorder returns an empty MemRecorder.
func NewMemRecorder() *MemRecorder { return &MemRecorder{groups: map[GroupKey]*Totals{}} }

// Record implements Recorder.
func (m *MemRecorder) Record(_ context.Context, r CallRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append(m.records, r)
	k := GroupKey{Role: r.Role, Model: r.Model, Stage: r.Stage}
	g := m.groups[k]
	if g == nil {
		g = &Totals{}
		m.groups[k] = g
	}
	g.add(r)
	m.total.add(r)
	return nil
}

// Records returns a copy of every record in arrival order.
func (m *MemRecorder) Records() []CallRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]CallRecord(nil), m.records...)
}

// Total returns the sums over every record.
func (m *MemRecorder) Total() Totals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// Groups returns the sums per role, model and stage, sorted by key.
func (m *MemRecorder) Groups() map[GroupKey]Totals {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[GroupKey]Totals, len(m.groups))
	for k, v := range m.groups {
		out[k] = *v
	}
	return out
}

// GroupKeys returns the group keys in a stable order.
func (m *MemRecorder) GroupKeys() []GroupKey {
	g := m.Groups()
	keys := make([]GroupKey, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Role != b.Role {
			return a.Role < b.Role
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Stage < b.Stage
	})
	return keys
}
