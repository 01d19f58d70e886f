package simulate

import (
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
)

// A trajectory's user messages carry the shard each revealed, as written:
// shard k at turn k, or the one ModeLiC's simulator chose, and none for a
// message that revealed none. The stored messages are left as they were.
func TestWithOriginals(t *testing.T) {
	msgs := func(users ...string) []conv.Message {
		var out []conv.Message
		for _, u := range users {
			out = append(out, conv.Message{Role: conv.User, Content: u}, conv.Message{Role: conv.Assistant, Content: "a"})
		}
		return out
	}
	shards := []string{"S1", "S2", "S3"}
	tests := []struct {
		name     string
		tr       Trajectory
		wantOrig []string // per user message
	}{
		{"shard k at turn k", Trajectory{Shards: shards, Messages: msgs("S1", "s2 reworded", "s3 reworded")}, []string{"S1", "S2", "S3"}},
		{"the simulator's choice", Trajectory{Shards: shards, Revealed: []int{1, 3, 0, 2}, Messages: msgs("S1", "s3", "chat", "s2")}, []string{"S1", "S3", "", "S2"}},
		{"no shards kept", Trajectory{Messages: msgs("x", "y")}, []string{"", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := withOriginals(tc.tr)
			var orig []string
			for i, m := range got {
				if m.Role == conv.User {
					orig = append(orig, m.Original)
				} else if m.Original != "" {
					t.Errorf("message %d (%s) has an original", i, m.Role)
				}
				if m.Content != tc.tr.Messages[i].Content || tc.tr.Messages[i].Original != "" {
					t.Errorf("message %d changed: %+v (stored %+v)", i, m, tc.tr.Messages[i])
				}
			}
			if len(orig) != len(tc.wantOrig) {
				t.Fatalf("originals %q, want %q", orig, tc.wantOrig)
			}
			for i := range orig {
				if orig[i] != tc.wantOrig[i] {
					t.Errorf("originals %q, want %q", orig, tc.wantOrig)
					break
				}
			}
		})
	}
}
