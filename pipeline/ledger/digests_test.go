package ledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ac3/ac3/pipeline/ledger"
)

// TestDigestSetAcrossBatches adds more digests than one transaction holds,
// each twice, and wants every first add new and every second not.
func TestDigestSetAcrossBatches(t *testing.T) {
	ctx := context.Background()
	s, err := ledger.NewDigestSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 45_000
	for round := range 2 {
		for i := range n {
			var d [16]byte
			copy(d[:], fmt.Sprintf("%016d", i))
			fresh, err := s.Add(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if fresh != (round == 0) {
				t.Fatalf("round %d, digest %d: new = %v", round, i, fresh)
			}
		}
	}
	if s.Len() != 2*n {
		t.Errorf("Len %d", s.Len())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
