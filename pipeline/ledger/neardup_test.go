package ledger_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// toyLanes is the size of toyNear's signatures.
const toyLanes = 8

// toyNear is a stand-in for the filter's MinHash (the ledger sits below
// the filter): a signature holds a hash of each of the first eight words
// of the user turns, each lane is its own band, and similarity is the share
// of equal lanes. A conversation whose first word is "bad" gets a signature
// of the wrong length, as a damaged one would be.
func toyNear(threshold float64) *ledger.NearDedupe {
	return &ledger.NearDedupe{
		Threshold: threshold,
		Sketch: func(c *conv.Conversation) ([]byte, []int64, bool) {
			var words []string
			for _, m := range c.Messages {
				if m.Role == conv.User {
					words = append(words, strings.Fields(m.Content)...)
				}
			}
			if len(words) == 0 {
				return nil, nil, false
			}
			sig := make([]byte, 4*toyLanes)
			bands := make([]int64, toyLanes)
			for i := range toyLanes {
				h := fnv.New32a()
				if i < len(words) {
					h.Write([]byte(words[i]))
				}
				binary.LittleEndian.PutUint32(sig[4*i:], h.Sum32())
				bands[i] = int64(i)<<32 | int64(h.Sum32())
			}
			if words[0] == "bad" {
				sig = sig[:5]
			}
			return sig, bands, true
		},
		Similarity: func(a, b []byte) (float64, error) {
			if len(a) != len(b) || len(a)%4 != 0 {
				return 0, fmt.Errorf("signatures of %d and %d bytes", len(a), len(b))
			}
			same := 0
			for i := 0; i < len(a); i += 4 {
				if string(a[i:i+4]) == string(b[i:i+4]) {
					same++
				}
			}
			return float64(same) / float64(len(a)/4), nil
		},
	}
}

func userText(id, user, answer string, line int64) *conv.Conversation {
	return &conv.Conversation{ID: id, Source: conv.Source{File: "in.jsonl", Line: line}, Messages: []conv.Message{
		{Role: conv.User, Content: user}, {Role: conv.Assistant, Content: answer},
	}}
}

// nearState is what a run holds after ingest: the kept ids in seq order
// and the near-duplicate pairs as "dropped>kept@similarity".
func nearState(t *testing.T, l *ledger.Ledger) (kept, pairs []string) {
	t.Helper()
	ctx := context.Background()
	err := l.EachPage(ctx, 100, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			kept = append(kept, s.Conv.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = l.EachNearDuplicate(ctx, func(p ledger.NearPair) error {
		pairs = append(pairs, fmt.Sprintf("%s>%s@%.3f", p.DroppedID, p.KeptID, p.Similarity))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kept, pairs
}

func TestNearDedupeKeepsTheFirstAndRecordsThePairs(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	in, err := l.AddInput(ctx, ledger.Input{Path: "/in.jsonl", Format: "canonical"})
	if err != nil {
		t.Fatal(err)
	}
	convs := []*conv.Conversation{
		userText("A", "a b c d e f g h", "one", 1),
		userText("B", "a b c d e f g x", "two", 2), // 7/8 of A
		userText("C", "z y x w v u t s", "three", 3),
		userText("D", "a b c d e f g h", "another answer", 4), // A's user turns
		userText("E", "a b c d e f x x", "five", 5),           // 6/8 of A: at the threshold
		userText("F", "z y x w v u t h", "six", 6),            // 7/8 of C, 1/8 of A
		userText("G", "a b c d q r s t", "seven", 7),          // 4/8 of A: kept
		userText("H", "a b c d e f s t", "eight", 8),          // 6/8 of A and of G: the earlier wins
		userText("I", "", "nothing to compare", 9),            // kept, not indexed
		userText("J", "", "nothing to compare either", 10),
		userText("K", "a b c d e f g h", "one", 11), // A exactly: an exact duplicate first
	}
	res, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, RecordsDone: int64(len(convs)), Finished: true, Kept: convs, Dedupe: true, Near: toyNear(0.75), Drops: map[string]int64{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept != 5 || res.NearDups != 5 || res.Duplicates != 1 {
		t.Errorf("result %+v, want 5 kept, 5 near duplicates, 1 duplicate", res)
	}
	kept, pairs := nearState(t, l)
	if want := []string{"A", "C", "G", "I", "J"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	want := []string{"B>A@0.875", "D>A@1.000", "E>A@0.750", "F>C@0.875", "H>A@0.750"}
	if !slices.Equal(pairs, want) {
		t.Errorf("pairs %v\nwant  %v", pairs, want)
	}
	var first ledger.NearPair
	if err := l.EachNearDuplicate(ctx, func(p ledger.NearPair) error { first = p; return errStop }); !errors.Is(err, errStop) {
		t.Errorf("a callback's error came back as %v", err)
	}
	if first.File != "/in.jsonl" || first.Line != 2 || first.KeptSeq != 1 {
		t.Errorf("first pair %+v: want file /in.jsonl, line 2, kept seq 1", first)
	}
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped[ledger.DropNearDuplicate] != 5 || st.Dropped[ledger.DropDuplicate] != 1 || len(st.NearDuplicates) != 3 {
		t.Errorf("status drops %v with %d pairs shown, want 5 near duplicates, 1 duplicate, 3 pairs", st.Dropped, len(st.NearDuplicates))
	}
}

var errStop = errors.New("stop")

// toyStream is n conversations of which about a third copy an earlier
// one's words with a few changed: from none (a near duplicate, or an exact
// one when the answer is the same too) to half (kept).
func toyStream(n int) []*conv.Conversation {
	r := rand.New(rand.NewPCG(3, 4))
	var out []*conv.Conversation
	var texts [][]string
	for i := range n {
		var u []string
		if len(texts) > 0 && r.IntN(3) == 0 {
			u = slices.Clone(texts[r.IntN(len(texts))])
			for range r.IntN(5) {
				u[r.IntN(len(u))] = fmt.Sprint("w", r.IntN(1000))
			}
		} else {
			for range toyLanes {
				u = append(u, fmt.Sprint("w", r.IntN(1000)))
			}
		}
		texts = append(texts, u)
		out = append(out, userText(fmt.Sprintf("c%03d", i), strings.Join(u, " "), fmt.Sprint("answer ", r.IntN(2)), int64(i+1)))
	}
	return out
}

// The kept set and the pairs depend on the input order only: committing
// the same stream in batches of any size, with the run closed and opened
// again between batches as a killed and resumed ingest would, gives what
// one batch gives.
func TestNearDedupeDecisionsDoNotDependOnBatches(t *testing.T) {
	ctx := context.Background()
	stream := toyStream(120)
	ingestIn := func(batch int) (kept, pairs []string) {
		path := filepath.Join(t.TempDir(), "run.db")
		var inID int64
		for start := 0; start < len(stream); start += batch {
			l, err := ledger.Open(ctx, path, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if start == 0 {
				in, err := l.AddInput(ctx, ledger.Input{Path: "/in.jsonl", Format: "canonical"})
				if err != nil {
					t.Fatal(err)
				}
				inID = in.ID
			}
			end := min(start+batch, len(stream))
			// Copies: the ledger must not depend on the batch's slice
			// being the one it saw before.
			var convs []*conv.Conversation
			for _, c := range stream[start:end] {
				cc := *c
				convs = append(convs, &cc)
			}
			if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: inID, RecordsDone: int64(end), Finished: end == len(stream), Kept: convs, Dedupe: true, Near: toyNear(0.75), Drops: map[string]int64{}}); err != nil {
				t.Fatal(err)
			}
			if end == len(stream) {
				kept, pairs := nearState(t, l)
				l.Close()
				return kept, pairs
			}
			l.Close() // the "kill" after a committed batch
		}
		return nil, nil
	}
	wantKept, wantPairs := ingestIn(len(stream))
	if len(wantPairs) < 10 || len(wantKept) < 10 {
		t.Fatalf("the stream has %d kept and %d near duplicates; the test needs both", len(wantKept), len(wantPairs))
	}
	for _, batch := range []int{1, 3, 7, 50} {
		kept, pairs := ingestIn(batch)
		if !slices.Equal(kept, wantKept) || !slices.Equal(pairs, wantPairs) {
			t.Errorf("batches of %d: kept %v\npairs %v\nwant kept %v\npairs %v", batch, kept, pairs, wantKept, wantPairs)
		}
	}
}

// A batch whose comparison meets a damaged signature is not committed,
// and the error says the run file is damaged.
func TestNearDedupeDamagedSignatureCommitsNothing(t *testing.T) {
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "run.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	in, err := l.AddInput(ctx, ledger.Input{Path: "/in.jsonl", Format: "canonical"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, RecordsDone: 1, Kept: []*conv.Conversation{userText("A", "bad b c d e f g h", "x", 1)}, Near: toyNear(0.75), Drops: map[string]int64{}}); err != nil {
		t.Fatal(err)
	}
	_, err = l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, RecordsDone: 3, Kept: []*conv.Conversation{
		userText("B", "z y x w v u t s", "x", 2), userText("C", "bad b c d e f g x", "x", 3),
	}, Near: toyNear(0.75), Drops: map[string]int64{}})
	if !errors.Is(err, ledger.ErrDamaged) {
		t.Fatalf("error %v, want ErrDamaged", err)
	}
	got, _, err := l.Input(ctx, "/in.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.CountConversations(ctx); err != nil || n != 1 || got.RecordsDone != 1 {
		t.Errorf("after the failed batch: %d conversations (%v), input at record %d; want 1 and 1", n, err, got.RecordsDone)
	}
}
