package filter_test

import (
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/filter"
)

// prose is everyday chat text with no domain keyword in it, so a domain
// check has to read all of it: the worst case for the scan.
const prose = `Hi! I'm planning a weekend trip with my family to the coast next month, ` +
	`and we'd like some ideas. We have two kids (ages 6 and 9) who love the beach, ` +
	`and my partner enjoys long walks and quiet cafés. Could you suggest a few towns ` +
	`that are not too crowded in early autumn? We'll drive from the city, so roughly ` +
	`three hours away would be ideal. Also, what should we pack — the weather there ` +
	`changes quickly, or so I've heard. Thanks a lot, this really helps!
P.S. We don't mind rain, but wind is another story… 😅 `

// protocolOptions are the WildChat protocol of the papers.
var protocolOptions = filter.Options{
	Languages: []string{"en"}, MinUserTurns: 5, MaxUserTurns: 10,
	Domains:   []string{"coding", "math", "science_medical", "business_finance", "education"},
	DropToxic: true, DropRedacted: true, MaxMessageBytes: 200000,
}

// benchConversation has turns user turns of about userBytes each, with
// assistant replies three times longer (they are not scanned).
func benchConversation(turns, userBytes int, tail string) *conv.Conversation {
	user := strings.Repeat(prose, userBytes/len(prose)+1)[:userBytes] + tail
	reply := strings.Repeat(prose, 3*userBytes/len(prose)+1)
	c := &conv.Conversation{ID: "bench", Format: "wildchat", Language: "English"}
	for range turns {
		c.Messages = append(c.Messages,
			conv.Message{Role: conv.User, Content: user},
			conv.Message{Role: conv.Assistant, Content: reply})
	}
	return c
}

func userBytes(convs ...*conv.Conversation) int64 {
	var n int64
	for _, c := range convs {
		for _, m := range c.Messages {
			if m.Role == conv.User {
				n += int64(len(m.Content))
			}
		}
	}
	return n
}

// BenchmarkCheck reports MB/s of user text given to Check.
//
//   - no_keyword: a 6-turn chat with no keyword, read to the end and dropped.
//   - late_keyword: the keyword is in the last turn, so all text is read too.
//   - mixed: a corpus like a WildChat shard: off-language, short and
//     technical chats (most stop early) next to long non-technical ones.
func BenchmarkCheck(b *testing.B) {
	f := mustNew(b, protocolOptions)
	run := func(b *testing.B, convs []*conv.Conversation) {
		b.Helper()
		b.SetBytes(userBytes(convs...))
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range convs {
				f.Check(c)
			}
		}
		b.ReportMetric(float64(b.N*len(convs))/b.Elapsed().Seconds(), "conv/s")
	}

	noKeyword := benchConversation(6, 1500, "")
	if keep, reason := f.Check(noKeyword); keep || reason != filter.ReasonDomain {
		b.Fatalf("no_keyword: Check = %v, %q", keep, reason)
	}
	b.Run("no_keyword", func(b *testing.B) { run(b, []*conv.Conversation{noKeyword}) })

	late := benchConversation(6, 1500, "")
	late.Messages[10].Content += " Also, can you fix my python script?"
	if keep, _ := f.Check(late); !keep {
		b.Fatal("late_keyword: dropped")
	}
	b.Run("late_keyword", func(b *testing.B) { run(b, []*conv.Conversation{late}) })

	mixed := []*conv.Conversation{
		noKeyword, late,
		benchConversation(7, 800, " What is the derivative of x^2?"),
		benchConversation(2, 300, " debug this"),
		benchConversation(12, 400, ""),
		benchConversation(5, 3000, ""),
	}
	spanish := benchConversation(6, 1000, "")
	spanish.Language = "Spanish"
	mixed = append(mixed, spanish)
	b.Run("mixed", func(b *testing.B) { run(b, mixed) })
}

// BenchmarkClassify reads all user text of every conversation.
func BenchmarkClassify(b *testing.B) {
	c := benchConversation(6, 1500, " a poem about python")
	b.SetBytes(userBytes(c))
	b.ReportAllocs()
	for b.Loop() {
		filter.Classify(c)
	}
}
