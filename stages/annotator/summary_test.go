package annotator_test

import (
	"errors"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/annotator"
)

func TestTally(t *testing.T) {
	decode := func(b []byte) (string, error) {
		if string(b) == "bad" {
			return "", errors.New("bad output")
		}
		return string(b), nil
	}
	var z annotator.Tally
	if got := z.Annotators(); got == nil || len(got) != 0 {
		t.Fatalf("empty tally's annotators = %#v, want an empty map", got)
	}
	var firsts []bool
	for _, u := range []ledger.Unit{
		{ConvID: "a", Status: ledger.Done, Output: []byte("llm:x")},
		{ConvID: "a", Status: ledger.Done, Output: []byte("llm:x")},
		{ConvID: "a", Status: ledger.Failed},
		{ConvID: "b", Status: ledger.Done, Output: []byte("bad")},
		{ConvID: "b", Status: ledger.Done, Output: []byte("heuristic")},
	} {
		if _, first, ok := annotator.Count(&z, u, decode, func(s string) string { return s }); ok {
			firsts = append(firsts, first)
		}
	}
	if z.Turns != 3 || z.Failed != 2 || z.Conversations != 2 {
		t.Errorf("tally = %+v", z)
	}
	if len(firsts) != 3 || !firsts[0] || firsts[1] || !firsts[2] {
		t.Errorf("first = %v", firsts)
	}
	m := z.Annotators()
	if m["llm:x"] != 2 || m["heuristic"] != 1 || len(m) != 2 {
		t.Errorf("annotators = %v", m)
	}
	m["llm:x"] = 9
	if z.Annotators()["llm:x"] != 2 {
		t.Error("Annotators handed out the tally's own map")
	}
}

func TestShare(t *testing.T) {
	if s, lo, hi := annotator.Share(3, 0); s != 0 || lo != 0 || hi != 0 {
		t.Errorf("Share(3, 0) = %v, %v, %v", s, lo, hi)
	}
	if s, lo, hi := annotator.Share(1, 4); s != 0.25 || lo >= s || hi <= s {
		t.Errorf("Share(1, 4) = %v, %v, %v", s, lo, hi)
	}
}
