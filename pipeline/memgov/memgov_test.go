package memgov_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/memgov"
)

const mib = 1 << 20

func policy() memgov.Policy {
	return memgov.Policy{Ceiling: 200 * mib, Floor: 32 * mib, Warmup: 10 * time.Second,
		WarmupCycles: 4, Window: 2 * time.Second, Slack: 0.10, Step: 1.25}
}

// s builds a sample: seconds since start, footprint in MiB, cycles, GC and
// process CPU seconds.
func s(sec int, fp int64, cycles uint64, gc, cpu float64) memgov.Sample {
	return memgov.Sample{Elapsed: time.Duration(sec) * time.Second, Footprint: fp * mib, GCCycles: cycles, GCCPU: gc, CPU: cpu}
}

func TestGovernor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ceiling int64 // MiB; replaces the policy's when not 0
		samples []memgov.Sample
		want    []int64 // limits passed to set, MiB
	}{
		{"warm-up keeps the ceiling", 0,
			[]memgov.Sample{s(0, 40, 0, 0, 0), s(5, 90, 3, 0.1, 4), s(9, 80, 8, 0.2, 8)},
			[]int64{200}},
		{"capped at the warm-up's peak", 0,
			[]memgov.Sample{s(0, 40, 0, 0, 0), s(5, 90, 3, 0.1, 4), s(10, 70, 6, 0.5, 9), s(20, 70, 9, 0.9, 18)},
			[]int64{200, 90}},
		{"few collections: never capped", 0,
			[]memgov.Sample{s(0, 40, 0, 0, 0), s(30, 90, 2, 0.1, 20), s(600, 95, 3, 0.2, 400)},
			[]int64{200}},
		{"raised when the collector's share climbs", 0,
			[]memgov.Sample{
				s(0, 40, 0, 0, 0), s(10, 80, 5, 0.5, 10), // baseline 5%
				s(11, 80, 8, 0.6, 11),   // window of 1 s CPU: too short to judge
				s(12, 80, 12, 0.8, 12),  // 2 s, 15%: within the slack
				s(14, 80, 30, 1.6, 14),  // 2 s, 40%: raise
				s(16, 100, 33, 1.8, 16), // 2 s, 10%: stay
			},
			[]int64{200, 80, 100}},
		{"a heavy start-up does not hide a starved collector", 0,
			[]memgov.Sample{
				s(0, 40, 0, 0, 0), s(10, 80, 5, 4.5, 10), // warm-up share 45%, counted as 25%
				s(12, 80, 30, 5.3, 12), // 2 s, 40%: raise
			},
			[]int64{200, 80, 100}},
		{"never above the ceiling", 0,
			[]memgov.Sample{
				s(0, 150, 0, 0, 0), s(10, 180, 5, 0.5, 10),
				s(12, 180, 20, 1.5, 12), s(14, 200, 40, 2.5, 14), s(16, 200, 60, 3.5, 16),
			},
			[]int64{200, 180, 200}},
		{"floor", 0,
			[]memgov.Sample{s(0, 5, 0, 0, 0), s(10, 8, 5, 0, 10)},
			[]int64{200, 32}},
		{"a command's own ceiling", 120,
			[]memgov.Sample{s(0, 40, 0, 0, 0), s(10, 150, 5, 0.5, 10)},
			[]int64{200, 120}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			p := policy()
			p.Headroom = 0 // read as 1: the limit is the peak itself
			g := memgov.New(p, func(n int64) { got = append(got, n/mib) })
			if tc.ceiling != 0 {
				g.SetCeiling(tc.ceiling * mib)
			}
			for _, x := range tc.samples {
				g.Observe(x)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("limits %v MiB, want %v", got, tc.want)
			}
		})
	}
}

// The limit held after the warm-up sits Headroom above its peak (so the
// collector keeps its own pace there and the scavenger has no reason to
// return pages), still within the floor and the ceiling, and a raise
// multiplies it from there.
func TestHeadroom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		headroom float64
		samples  []memgov.Sample
		want     []int64 // MiB
	}{
		{"a quarter above the peak", 1.25,
			[]memgov.Sample{s(0, 40, 0, 0, 0), s(5, 80, 3, 0.1, 4), s(10, 70, 6, 0.5, 9)},
			[]int64{200, 100}},
		{"the ceiling still bounds it", 1.25,
			[]memgov.Sample{s(0, 40, 0, 0, 0), s(10, 180, 6, 0.5, 9)},
			[]int64{200}},
		{"the floor still holds", 1.5,
			[]memgov.Sample{s(0, 5, 0, 0, 0), s(10, 10, 5, 0, 10)},
			[]int64{200, 32}},
		{"below 1 is 1", 0.5,
			[]memgov.Sample{s(0, 40, 0, 0, 0), s(10, 90, 5, 0.5, 10)},
			[]int64{200, 90}},
		{"raised from the margin, not the peak", 1.25,
			[]memgov.Sample{
				s(0, 40, 0, 0, 0), s(10, 64, 5, 0.5, 10), // baseline 5%, limit 80
				s(12, 80, 30, 1.5, 12), // 2 s, 50%: raise to 100
			},
			[]int64{200, 80, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			p := policy()
			p.Headroom = tc.headroom
			g := memgov.New(p, func(n int64) { got = append(got, n/mib) })
			for _, x := range tc.samples {
				g.Observe(x)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("limits %v MiB, want %v", got, tc.want)
			}
		})
	}
}

// The default policy holds a command that warmed up at 80 MiB at 100 MiB,
// under a ceiling that leaves it room.
func TestDefaultPolicy(t *testing.T) {
	var got []int64
	g := memgov.New(memgov.DefaultPolicy(256*mib), func(n int64) { got = append(got, n/mib) })
	g.Observe(s(0, 40, 0, 0, 0))
	g.Observe(s(15, 80, 10, 0.5, 10))
	g.Observe(s(18, 80, 14, 0.6, 13)) // 3 s, 3%: within the slack
	if want := []int64{256, 100}; !reflect.DeepEqual(got, want) {
		t.Errorf("limits %v MiB, want %v", got, want)
	}
}

// A ceiling lowered after the cap pulls the limit down with it.
func TestSetCeilingAfterCap(t *testing.T) {
	var got []int64
	g := memgov.New(policy(), func(n int64) { got = append(got, n/mib) })
	g.Observe(s(0, 40, 0, 0, 0))
	g.Observe(s(10, 150, 5, 0.5, 10))
	g.SetCeiling(100 * mib)
	g.SetCeiling(190 * mib) // capped: raising the ceiling leaves the limit
	if want := []int64{200, 150, 100}; !reflect.DeepEqual(got, want) {
		t.Errorf("limits %v MiB, want %v", got, want)
	}
}

// With no ceiling nothing is set until the cap.
func TestNoCeiling(t *testing.T) {
	var got []int64
	p := policy()
	p.Ceiling = 0
	g := memgov.New(p, func(n int64) { got = append(got, n/mib) })
	g.Observe(s(0, 40, 0, 0, 0))
	g.Observe(s(10, 300, 5, 0.5, 10))
	g.Observe(s(12, 300, 25, 1.5, 12))
	if want := []int64{300, 375}; !reflect.DeepEqual(got, want) {
		t.Errorf("limits %v MiB, want %v", got, want)
	}
}

// Run reads the real runtime: after enough collections with a zero warm-up
// it caps the limit at a footprint the runtime reports. The test waits on
// the limit, not on a duration.
func TestRunReadsTheRuntime(t *testing.T) {
	p := policy()
	p.Warmup, p.WarmupCycles, p.Ceiling = 0, 0, 0
	set := make(chan int64, 16)
	g := memgov.New(p, func(n int64) { set <- n })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go g.Run(ctx, time.Millisecond)
	n := <-set
	if n < p.Floor || n > 1<<40 {
		t.Fatalf("limit %d from the runtime's footprint", n)
	}
}
