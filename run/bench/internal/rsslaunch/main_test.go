//go:build unix

package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestGCCPUReadsTraceLines(t *testing.T) {
	tests := []struct {
		line string
		ms   float64
		ok   bool
	}{
		{"gc 1 @0.012s 2%: 0.026+0.39+0.042 ms clock, 0.21+0.26/0.48/0.15+0.34 ms cpu, 4->4->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 8 P", 1.44, true},
		{"gc 12 @3.5s 1%: 0.1+2+0.05 ms clock, 0.2+1/3/0+0.1 ms cpu, 60->61->30 MB, 62 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)", 4.3, true},
		{"gc 3 @1s 0%: x ms clock, 1+y ms cpu", 0, false},
		{"ingest: 1000 conversations", 0, false},
		{"gc 4 @1s: 1 ms clock, 2 ms", 0, false},
	}
	for _, tc := range tests {
		ms, ok := gcCPU(tc.line)
		if ok != tc.ok || math.Abs(ms-tc.ms) > 1e-9 {
			t.Errorf("gcCPU(%q) = %v, %v; want %v, %v", tc.line, ms, ok, tc.ms, tc.ok)
		}
	}
}

func TestTraceLinesAreCountedAndTheRestPassed(t *testing.T) {
	in := "gc 1 @0.1s 1%: 0+0+0 ms clock, 1+1/1/1+1 ms cpu, 4->4->0 MB, 4 MB goal, 2 P\nwarning: slow\ngc 2 @0.2s 1%: 0+0+0 ms clock, 2+0/0/0+0 ms cpu, 4->4->0 MB, 4 MB goal, 2 P\n"
	var g gcTotal
	var rest bytes.Buffer
	if err := g.read(strings.NewReader(in), &rest); err != nil {
		t.Fatal(err)
	}
	if g.cycles != 2 || g.nanos != 7e6 || rest.String() != "warning: slow\n" {
		t.Fatalf("got %d cycles, %d ns, rest %q", g.cycles, g.nanos, rest.String())
	}
}

func FuzzGCCPU(f *testing.F) {
	f.Add("gc 1 @0.012s 2%: 0.026+0.39+0.042 ms clock, 0.21+0.26/0.48/0.15+0.34 ms cpu, 4->4->0 MB")
	f.Fuzz(func(t *testing.T, line string) {
		if ms, ok := gcCPU(line); ok && (ms < 0 || math.IsNaN(ms)) {
			t.Fatalf("gcCPU(%q) = %v", line, ms)
		}
	})
}
