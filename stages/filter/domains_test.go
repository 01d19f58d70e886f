package filter_test

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/filter"
)

func TestDomains(t *testing.T) {
	want := []string{"creative_writing", "science_medical", "business_finance", "education", "math", "coding"}
	if got := filter.Domains(); !slices.Equal(got, want) {
		t.Errorf("Domains() = %v, want %v", got, want)
	}
	for _, d := range want {
		if len(filter.Keywords(d)) == 0 {
			t.Errorf("Keywords(%q) is empty", d)
		}
	}
	if kw := filter.Keywords("coding"); !slices.Contains(kw, "c++") || !slices.Contains(kw, "data structure") {
		t.Errorf("Keywords(coding) = %v", kw)
	}
	if filter.Keywords("cooking") != nil {
		t.Error("Keywords of an unknown domain is not nil")
	}
	first := filter.Keywords("math")[0]
	filter.Keywords("math")[0] = "changed"
	if filter.Keywords("math")[0] != first {
		t.Error("Keywords returns a shared slice")
	}
}

func TestClassifyMatching(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		// Word boundaries.
		{"an excellent day", nil},
		{"a cell divides", []string{"science_medical"}},
		{"cellular phones", nil},
		{"javascript", []string{"coding"}},
		{"java", []string{"coding"}},
		{"javafx", nil},
		{"python3", nil}, // digits are word bytes, as in regexp's \b
		{"my_python_env", nil},
		{"(python)", []string{"coding"}},
		{"python.", []string{"coding"}},
		{"the student's essay", []string{"creative_writing", "education"}},
		{"scoped", nil},
		{"encode", nil},
		{"barcode", nil},
		{"prooftext", nil},
		// Case.
		{"PYTHON", []string{"coding"}},
		{"The GDP grew", []string{"business_finance"}},
		{"gdp", []string{"business_finance"}},
		{"Dna", []string{"science_medical"}},
		// Plurals.
		{"two cells", []string{"science_medical"}},
		{"many viruses", []string{"science_medical"}},
		{"heroes", []string{"creative_writing"}},
		{"these classes", []string{"coding"}},
		{"studies show", []string{"education"}},
		{"libraries", []string{"coding"}},
		{"probabilities", []string{"math"}},
		{"APIs", []string{"coding"}},
		{"cellss", nil},
		{"studys", []string{"education"}}, // "s" is always allowed
		{"debugging", nil},                // no other inflection
		// Phrases.
		{"a fairy tale", []string{"creative_writing"}},
		{"fairy tales", []string{"creative_writing"}},
		{"fairy-tale", []string{"creative_writing"}},
		{"Fairy\n\n  Tale", []string{"creative_writing"}},
		{"fairy", nil},
		{"fairytale", nil},
		{"fairy talent", nil},
		{"please explain to me", []string{"education"}},
		{"explain it to me", nil},
		{"venture capitalist", nil},
		{"supply chains", []string{"business_finance"}},
		{"linear algebra", []string{"math"}}, // also "algebra"
		// c++ is a word; digits may follow it.
		{"in C++", []string{"coding"}},
		{"C++17 and c++20", []string{"coding"}},
		{"abc++", nil},
		{"c", nil},
		{"plan c", nil},
		// Non-ASCII is a boundary.
		{"用python写一个脚本", []string{"coding"}},
		{"écrire un poème", nil},
		{"un essay très long", []string{"creative_writing"}},
		{"naïve", nil},
		// Several domains.
		{"write a poem about calculus in python", []string{"creative_writing", "math", "coding"}},
		{"", nil},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got := filter.Classify(chat(tt.text))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Classify(%q) = %v, want %v", tt.text, got, tt.want)
			}
			if ref := refClassify(tt.text); !slices.Equal(ref, tt.want) {
				t.Errorf("reference(%q) = %v, want %v (the test's reference is off)", tt.text, ref, tt.want)
			}
		})
	}
}

func TestClassifyMessagesAreSeparate(t *testing.T) {
	c := chat("once upon a fairy", "tale about nothing")
	if got := filter.Classify(c); got != nil {
		t.Errorf("a phrase matched across two messages: %v", got)
	}
	c = chat("hello", "I need a poem")
	c.Messages[1].Content = "here is python code" // assistant
	if got := filter.Classify(c); !slices.Equal(got, []string{"creative_writing"}) {
		t.Errorf("Classify = %v, want only the user's domain", got)
	}
}

// refClassify is a slow, obvious implementation of the documented matching
// rules: split into runs of word bytes, compare token sequences.
func refClassify(text string) []string {
	tokens := tokenize(text)
	var out []string
	for _, d := range filter.Domains() {
	keywords:
		for _, kw := range filter.Keywords(d) {
			words := tokenize(kw)
			for i := 0; i+len(words) <= len(tokens); i++ {
				if refMatch(tokens[i:i+len(words)], words) {
					out = append(out, d)
					break keywords
				}
			}
		}
	}
	return out
}

func refMatch(tokens, words []string) bool {
	n := len(words) - 1
	if !slices.Equal(tokens[:n], words[:n]) {
		return false
	}
	tok, w := tokens[n], words[n]
	if last := w[len(w)-1]; last < 'a' || last > 'z' {
		return strings.HasPrefix(tok, w)
	}
	if tok == w || tok == w+"s" || tok == w+"es" {
		return true
	}
	k := len(w)
	return k > 1 && w[k-1] == 'y' && !strings.ContainsRune("aeiou", rune(w[k-2])) && tok == w[:k-1]+"ies"
}

func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_' || r == '+')
	})
}

// randomText strings keyword pieces, near misses and separators together, so
// that boundaries, plurals and phrases meet in odd ways.
func randomText(r *rand.Rand) string {
	var pieces []string
	for _, d := range filter.Domains() {
		for _, kw := range filter.Keywords(d) {
			pieces = append(pieces, kw, strings.ToUpper(kw), kw[:len(kw)/2], kw[len(kw)/2:])
		}
	}
	seps := []string{" ", "  ", "-", "\n", "_", "+", "s", "es", "ies", "y", "é", "中", "3", ".", "'", "x", ""}
	var b strings.Builder
	for range r.IntN(12) + 1 {
		b.WriteString(pieces[r.IntN(len(pieces))])
		b.WriteString(seps[r.IntN(len(seps))])
	}
	return b.String()
}

func TestClassifyAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		text := randomText(r)
		if got, want := filter.Classify(chat(text)), refClassify(text); !slices.Equal(got, want) {
			t.Fatalf("Classify(%q) = %v, reference %v", text, got, want)
		}
	}
}

func FuzzClassify(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		f.Add(randomText(r))
	}
	f.Add("fairy  tale")
	f.Add("C++17")
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := filter.Classify(chat(text)), refClassify(text); !slices.Equal(got, want) {
			t.Fatalf("Classify(%q) = %v, reference %v", text, got, want)
		}
	})
}

// wildchatSample reads the real WildChat records in fixtures/wildchat.
func wildchatSample(tb testing.TB) []*conv.Conversation {
	tb.Helper()
	f, err := os.Open("../../fixtures/wildchat/wildchat-1m-sample10.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []*conv.Conversation
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Hash         string `json:"conversation_hash"`
			Language     string `json:"language"`
			Toxic        bool   `json:"toxic"`
			Redacted     bool   `json:"redacted"`
			Conversation []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"conversation"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			tb.Fatalf("reading WildChat sample: %v", err)
		}
		c := &conv.Conversation{ID: rec.Hash, Format: "wildchat", Language: rec.Language, Toxic: rec.Toxic, Redacted: rec.Redacted}
		for _, m := range rec.Conversation {
			role, _ := conv.ParseRole(m.Role)
			c.Messages = append(c.Messages, conv.Message{Role: role, Content: m.Content})
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("reading WildChat sample: %v", err)
	}
	return out
}

func TestWildChatSample(t *testing.T) {
	convs := wildchatSample(t)
	f := mustNew(t, filter.Options{Languages: []string{"en"}, MinUserTurns: 5, MaxUserTurns: 10,
		Domains: []string{"coding", "math", "science_medical", "business_finance", "education"}})
	var kept []string
	reasons := map[filter.Reason]int{}
	for _, c := range convs {
		keep, reason := f.Check(c)
		reasons[reason]++
		if keep {
			kept = append(kept, c.ID[:8])
		}
		var users strings.Builder
		for _, m := range c.Messages {
			if m.Role == conv.User {
				users.WriteString(m.Content)
				users.WriteString("\x00") // keeps messages apart for the reference
			}
		}
		if got, want := filter.Classify(c), refClassify(users.String()); !slices.Equal(got, want) {
			t.Errorf("%s: Classify = %v, reference %v", c.ID[:8], got, want)
		}
	}
	t.Logf("kept %v; reasons %v", kept, reasons)
	// Of the ten, only the 7-turn English probability question and the
	// 6-turn English NAS design pass the protocol.
	if want := []string{"aa7c3f49", "49f2df1f"}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
}
