package compint_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/tokens"
)

// counter is built once per test binary: loading the BPE table takes a few
// hundred milliseconds.
var counter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New("") })

func mustCounter(tb testing.TB) *tokens.Counter {
	tb.Helper()
	c, err := counter()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// synthConv makes a conversation of n complete turns whose messages have
// about words words each, every word naming its conversation, turn and
// role, so a test can tell where any message came from.
func synthConv(id string, n, words int) *conv.Conversation {
	c := &conv.Conversation{ID: id, Format: "synthetic", Source: conv.Source{File: id + ".jsonl", Line: 1}, Language: "English"}
	for t := 1; t <= n; t++ {
		c.Messages = append(c.Messages,
			conv.Message{Role: conv.User, Content: text(fmt.Sprintf("%s-u%d", id, t), words)},
			conv.Message{Role: conv.Assistant, Content: text(fmt.Sprintf("%s-a%d", id, t), words)})
	}
	return c
}

func text(tag string, words int) string {
	var b strings.Builder
	b.WriteString(tag)
	for i := 1; i < words; i++ {
		fmt.Fprintf(&b, " w%d", i%7)
	}
	return b.String()
}

// seq turns a slice into the iterator Build reads.
func seq(cs []*conv.Conversation) iter.Seq2[*conv.Conversation, error] {
	return func(yield func(*conv.Conversation, error) bool) {
		for _, c := range cs {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// wildchat reads the WildChat sample kept in fixtures/wildchat with a
// minimal decoder of the fields a test needs (stages may not import the
// io readers).
func wildchat(tb testing.TB) []*conv.Conversation {
	tb.Helper()
	f, err := os.Open("../../fixtures/wildchat/wildchat-1m-sample10.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []*conv.Conversation
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	line := 0
	for sc.Scan() {
		line++
		var rec struct {
			Hash     string `json:"conversation_hash"`
			Language string `json:"language"`
			Conv     []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"conversation"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			tb.Fatalf("line %d: %v", line, err)
		}
		c := &conv.Conversation{ID: rec.Hash, Format: "wildchat", Language: rec.Language,
			Source: conv.Source{File: "wildchat-1m-sample10.jsonl", Line: int64(line)}}
		for _, m := range rec.Conv {
			r, ok := conv.ParseRole(m.Role)
			if !ok {
				tb.Fatalf("line %d: role %q", line, m.Role)
			}
			c.Messages = append(c.Messages, conv.Message{Role: r, Content: m.Content})
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}
