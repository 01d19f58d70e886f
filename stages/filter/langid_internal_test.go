package filter

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
)

func TestUserSample(t *testing.T) {
	msgs := func(texts ...string) *conv.Conversation {
		c := &conv.Conversation{System: "system text is never read"}
		for _, s := range texts {
			c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: s}, conv.Message{Role: conv.Assistant, Content: "reply"})
		}
		return c
	}
	tests := []struct {
		name  string
		c     *conv.Conversation
		limit int
		want  string
	}{
		{"one short turn", msgs("hello"), 10, "hello"},
		{"turns joined by newlines", msgs("ab", "cd", "ef"), 10, "ab\ncd\nef"},
		{"cut at the limit", msgs("abcdef", "ghij"), 8, "abcdef\ng"},
		{"a long first turn is cut", msgs("abcdefghijkl"), 5, "abcde"},
		{"a character is never cut in two", msgs("aé"), 2, "a"},
		{"nor in a later turn", msgs("a", "中文"), 4, "a\n"},
		{"empty turns are skipped", msgs("", "x", ""), 10, "x"},
		{"no user turn", &conv.Conversation{Messages: []conv.Message{{Role: conv.Assistant, Content: "hi"}}}, 10, ""},
		{"exactly the limit", msgs("abc", "d"), 5, "abc\nd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := userSample(tt.c, tt.limit); got != tt.want {
				t.Errorf("userSample = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzUserSample checks the sample is at most limit bytes, a prefix of the
// user turns joined by newlines, and cuts no valid character in two.
func FuzzUserSample(f *testing.F) {
	f.Add("hello", "wörld", "中文", 7)
	f.Add("\xe4\xb8", "\xff", "", 1)
	f.Add("", "", "", 0)
	f.Fuzz(func(t *testing.T, a, b, c string, limit int) {
		limit = 1 + min(max(limit, 0), 4096)
		cv := &conv.Conversation{Messages: []conv.Message{
			{Role: conv.User, Content: a}, {Role: conv.Assistant, Content: "x"},
			{Role: conv.User, Content: b}, {Role: conv.User, Content: c}}}
		got := userSample(cv, limit)
		var parts []string
		for _, s := range []string{a, b, c} {
			if s != "" {
				parts = append(parts, s)
			}
		}
		joined := strings.Join(parts, "\n")
		if len(got) > limit || !strings.HasPrefix(joined, got) {
			t.Fatalf("userSample(%q, %d) = %q", joined, limit, got)
		}
		if utf8.ValidString(joined) && !utf8.ValidString(got) {
			t.Fatalf("userSample cut a character: %q", got)
		}
		if len(joined) <= limit && got != joined {
			t.Fatalf("userSample(%q, %d) = %q, want all of it", joined, limit, got)
		}
		if len(joined) > limit && utf8.ValidString(joined) && len(got) < limit-utf8.UTFMax+1 {
			t.Fatalf("userSample(%q, %d) = %q: cut more than a character", joined, limit, got)
		}
	})
}
