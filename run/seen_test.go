package run

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
)

func TestSeenSetRemembersInFixedMemory(t *testing.T) {
	s := newSeenSet()
	const n = 200_000
	wrong := 0
	for i := range n {
		h := sha256.Sum256([]byte(strconv.Itoa(i)))
		if !s.add(hex.EncodeToString(h[:])) {
			wrong++ // a false "seen"
		}
	}
	if wrong > 2 {
		t.Errorf("%d of %d distinct hashes were taken for duplicates", wrong, n)
	}
	for i := range 1000 {
		h := sha256.Sum256([]byte(strconv.Itoa(i)))
		if s.add(hex.EncodeToString(h[:])) {
			t.Fatalf("hash %d was forgotten", i)
		}
	}
	if !s.add("not hex") || s.add("not hex") {
		t.Error("a non-hex key is not remembered")
	}
	if got := len(s.bits) * 8; got != seenBits/8 {
		t.Errorf("the set holds %d bytes, want %d", got, seenBits/8)
	}
}
