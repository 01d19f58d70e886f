package filter_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/filter"
)

// user builds a conversation of the given user texts, each followed by an
// assistant reply in English, with no language field.
func user(texts ...string) *conv.Conversation {
	c := &conv.Conversation{ID: "u", Format: "sharegpt"}
	for _, t := range texts {
		c.Messages = append(c.Messages,
			conv.Message{Role: conv.User, Content: t},
			conv.Message{Role: conv.Assistant, Content: "Sure, here is what I found about that, in English."})
	}
	return c
}

func TestIdentify(t *testing.T) {
	tests := []struct {
		name string
		c    *conv.Conversation
		want string // "" for none
	}{
		{"English", user("Can you explain how photosynthesis works in simple terms? I need it for homework."), "English"},
		{"Spanish", user("¿Puedes explicarme cómo funciona la fotosíntesis con palabras sencillas?"), "Spanish"},
		{"Chinese is named as WildChat names it", user("请用简单的话解释一下光合作用是怎么回事。"), "Chinese"},
		{"Japanese", user("東京でおすすめの美術館を三つ教えてください。"), "Japanese"},
		{"Russian", user("Объясни, пожалуйста, простыми словами, как работает фотосинтез у растений и почему для этого нужен солнечный свет."), "Russian"},
		{"Korean", user("서울에서 가볼 만한 박물관을 추천해 주세요."), "Korean"},
		{"later user turns count too", user("ok", "Je voudrais savoir comment fonctionne la photosynthèse, expliquée simplement pour un enfant."), "French"},
		{"the assistant's replies are not read", &conv.Conversation{Messages: []conv.Message{
			{Role: conv.User, Content: "Wie viele Einwohner hat Berlin ungefähr, und wie hat sich die Zahl entwickelt?"},
			{Role: conv.Assistant, Content: "Berlin has about 3.7 million inhabitants, and the number has grown since reunification, as anyone can read in English sources."}}}, "German"},
		{"the system message is not read", &conv.Conversation{System: "Réponds toujours en français, de manière concise et polie, s'il te plaît.",
			Messages: []conv.Message{{Role: conv.User, Content: "What is the capital of Australia, and why is it not Sydney?"}}}, "English"},
		{"digits and punctuation give none", user("12345 + 67890 = ?"), ""},
		{"no user text gives none", &conv.Conversation{Messages: []conv.Message{{Role: conv.Assistant, Content: "Hello there, how can I help?"}}}, ""},
		{"empty user turns give none", user("", ""), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, confidence, ok := filter.Identify(tt.c)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("Identify = %q, %v, %v; want %q", got, confidence, ok, tt.want)
			}
			if confidence < 0 || confidence > 1 || (!ok && confidence != 0) {
				t.Errorf("confidence %v", confidence)
			}
		})
	}
}

func TestLabel(t *testing.T) {
	spanish := "¿Puedes explicarme cómo funciona la fotosíntesis con palabras sencillas?"
	withField := func() *conv.Conversation { c := user(spanish); c.Format = "wildchat"; c.Language = "English"; return c }
	noField := func() *conv.Conversation { return user(spanish) }
	canonical := func() *conv.Conversation {
		c := user(spanish)
		c.Language, c.LanguageSource, c.LanguageDetector, c.LanguageConfidence = "Italian", conv.LanguageIdentified, "some-detector 0.1", 0.5
		return c
	}
	english := []string{"English"}
	tests := []struct {
		name       string
		policy     string
		langs      []string // the language filter
		c          *conv.Conversation
		lang, src  string
		identified bool // detector and confidence set by this detector
	}{
		{"the input's field is kept by default", "", english, withField(), "English", conv.LanguageFromInput, false},
		{"missing: the input's field is kept", filter.IdentifyMissing, nil, withField(), "English", conv.LanguageFromInput, false},
		{"always: the input's field is replaced", filter.IdentifyAlways, nil, withField(), "Spanish", conv.LanguageIdentified, true},
		{"never: the input's field is kept", filter.IdentifyNever, english, withField(), "English", conv.LanguageFromInput, false},
		{"no field: identified by default for a language filter", "", english, noField(), "Spanish", conv.LanguageIdentified, true},
		{"no field: not identified by default without one", "", nil, noField(), "", "", false},
		{"no field, missing: identified without a filter", filter.IdentifyMissing, nil, noField(), "Spanish", conv.LanguageIdentified, true},
		{"no field, always: identified", filter.IdentifyAlways, nil, noField(), "Spanish", conv.LanguageIdentified, true},
		{"no field, never: stays unknown", filter.IdentifyNever, english, noField(), "", "", false},
		{"a recorded source is kept", "", english, canonical(), "Italian", conv.LanguageIdentified, false},
		{"always: another detector's answer is replaced", filter.IdentifyAlways, english, canonical(), "Spanish", conv.LanguageIdentified, true},
		{"nothing to identify: unknown", "", english, user("42"), "", "", false},
		{"policy in any case", "ALWAYS", nil, withField(), "Spanish", conv.LanguageIdentified, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustNew(t, filter.Options{IdentifyLanguage: tt.policy, Languages: tt.langs})
			c := tt.c
			before := c.LanguageDetector
			f.Label(c)
			if c.Language != tt.lang || c.LanguageSource != tt.src {
				t.Fatalf("Label: language %q from %q; want %q from %q", c.Language, c.LanguageSource, tt.lang, tt.src)
			}
			switch {
			case tt.identified && (c.LanguageDetector != filter.Detector || c.LanguageConfidence <= 0 || c.LanguageConfidence > 1):
				t.Errorf("identified, but detector %q confidence %v", c.LanguageDetector, c.LanguageConfidence)
			case !tt.identified && c.LanguageDetector != before:
				t.Errorf("detector changed from %q to %q", before, c.LanguageDetector)
			case !tt.identified && tt.src != conv.LanguageIdentified && c.LanguageConfidence != 0:
				t.Errorf("confidence %v on a language not identified", c.LanguageConfidence)
			}
			// Labelling again changes nothing.
			again := *c
			f.Label(&again)
			if again.Language != c.Language || again.LanguageSource != c.LanguageSource || again.LanguageDetector != c.LanguageDetector || again.LanguageConfidence != c.LanguageConfidence {
				t.Errorf("a second Label changed %+v to %+v", c, again)
			}
		})
	}
}

func TestIdentifyPolicyIsValidated(t *testing.T) {
	err := filter.Options{IdentifyLanguage: "sometimes"}.Validate()
	if err == nil || !strings.Contains(err.Error(), `IdentifyLanguage: "sometimes" is not "auto", "missing", "always" or "never"`) {
		t.Fatalf("Validate() = %v", err)
	}
	for _, p := range []string{"", "auto", "missing", "Always", " never "} {
		if err := (filter.Options{IdentifyLanguage: p}).Validate(); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}

func TestApplyFiltersConversationsWithoutALanguageField(t *testing.T) {
	english := user("Can you explain how photosynthesis works in simple terms? I need it for homework.")
	spanish := user("¿Puedes explicarme cómo funciona la fotosíntesis con palabras sencillas?")
	digits := user("12345 + 67890 = ?")
	short := user("¿Puedes explicarme cómo funciona la fotosíntesis con palabras sencillas?")
	tests := []struct {
		name   string
		opts   filter.Options
		c      *conv.Conversation
		keep   bool
		reason filter.Reason
		lang   string
	}{
		{"English kept", filter.Options{Languages: []string{"en"}}, english, true, "", "English"},
		{"Spanish dropped", filter.Options{Languages: []string{"English"}}, spanish, false, filter.ReasonLanguage, "Spanish"},
		{"Spanish kept by its code", filter.Options{Languages: []string{"es"}}, spanish, true, "", "Spanish"},
		{"unknown kept by default", filter.Options{Languages: []string{"English"}}, digits, true, "", ""},
		{"unknown dropped on request", filter.Options{Languages: []string{"English"}, UnknownLanguage: filter.UnknownDrop}, digits, false, filter.ReasonLanguage, ""},
		{"never: the filter does not apply", filter.Options{Languages: []string{"English"}, IdentifyLanguage: filter.IdentifyNever}, spanish, true, "", ""},
		// Without a language filter only kept conversations are read, and
		// only when asked for.
		{"no language filter: not identified by default", filter.Options{MaxUserTurns: 3}, spanish, true, "", ""},
		{"missing, dropped by another filter: not identified", filter.Options{MinUserTurns: 2, IdentifyLanguage: filter.IdentifyMissing}, short, false, filter.ReasonTooFewTurns, ""},
		{"missing, kept without a language filter: identified", filter.Options{MaxUserTurns: 3, IdentifyLanguage: filter.IdentifyMissing}, spanish, true, "", "Spanish"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *tt.c
			c.Language, c.LanguageSource = "", ""
			keep, reason := mustNew(t, tt.opts).Apply(&c)
			if keep != tt.keep || reason != tt.reason || c.Language != tt.lang {
				t.Errorf("Apply = %v, %q, language %q; want %v, %q, %q", keep, reason, c.Language, tt.keep, tt.reason, tt.lang)
			}
		})
	}
}

// Prelabel does ahead what Apply would do, and Apply then does it no more.
func TestPrelabelDoesWhatApplyWould(t *testing.T) {
	spanish := "¿Puedes explicarme cómo funciona la fotosíntesis con palabras sencillas?"
	for _, opts := range []filter.Options{
		{Languages: []string{"English"}},
		{MinUserTurns: 2, IdentifyLanguage: filter.IdentifyMissing},
		{IdentifyLanguage: filter.IdentifyMissing},
		{},
	} {
		f := mustNew(t, opts)
		a, b := user(spanish), user(spanish)
		keepA, reasonA := f.Apply(a)
		f.Prelabel(b)
		labelled := *b
		keepB, reasonB := f.Apply(b)
		if keepA != keepB || reasonA != reasonB || !reflect.DeepEqual(a, b) || !reflect.DeepEqual(&labelled, b) {
			t.Errorf("%+v: Apply %v %q %+v; Prelabel %+v then Apply %v %q %+v", opts, keepA, reasonA, a, labelled, keepB, reasonB, b)
		}
	}
}

func TestIdentifyReadsAFixedPrefixOfTheUserTurns(t *testing.T) {
	// Whichever language fills the first IdentifyBytes wins, however much
	// of the other follows: nothing past the prefix is read.
	french := strings.Repeat("Je voudrais comprendre comment fonctionne la photosynthèse chez les plantes vertes. ", 13)
	english := strings.Repeat("Now tell me everything about the history of the printing press in Europe. ", 400)
	if len(french) < filter.IdentifyBytes {
		t.Fatalf("the French turn is %d bytes; make it fill %d", len(french), filter.IdentifyBytes)
	}
	for _, tt := range []struct {
		c    *conv.Conversation
		want string
	}{
		{user(french, english), "French"},
		{user(english, french), "English"},
		{user(french[:filter.IdentifyBytes/2], english), "English"},
	} {
		if got, _, _ := filter.Identify(tt.c); got != tt.want {
			t.Errorf("Identify = %q, want %q", got, tt.want)
		}
	}
}

// FuzzIdentify checks that identification never panics, always answers
// in [0,1], and labels the same text the same way every time.
func FuzzIdentify(f *testing.F) {
	f.Add("hello there, how are you?", "你好", 0)
	f.Add("\xff\xfe\xe4\xb8", "", 3)
	f.Add(strings.Repeat("é", 600), "日本語のテキスト", 1)
	f.Add("", "", 0)
	f.Fuzz(func(t *testing.T, a, b string, pad int) {
		// pad shifts where the prefix ends, so cuts land inside characters.
		a = strings.Repeat("x", min(max(pad, 0), 2*filter.IdentifyBytes)) + a
		c := user(a, b)
		name, confidence, ok := filter.Identify(c)
		if ok != (name != "") || confidence < 0 || confidence > 1 || (!ok && confidence != 0) {
			t.Fatalf("Identify = %q, %v, %v", name, confidence, ok)
		}
		if !utf8.ValidString(name) {
			t.Fatalf("name %q is not UTF-8", name)
		}
		name2, confidence2, _ := filter.Identify(c)
		if name2 != name || confidence2 != confidence {
			t.Fatalf("not deterministic: %q %v, then %q %v", name, confidence, name2, confidence2)
		}
	})
}

// wildchatRecord is what the agreement test reads of a WildChat-1M line.
type wildchatRecord struct {
	Language     string `json:"language"`
	Conversation []struct {
		Role     string `json:"role"`
		Content  string `json:"content"`
		Language string `json:"language"`
	} `json:"conversation"`
}

func readWildChat(tb testing.TB, path string) []wildchatRecord {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	var out []wildchatRecord
	for sc.Scan() {
		var r wildchatRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			tb.Fatalf("reading %s: %v", path, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// conversation is r's messages without its language field: what a format
// without one gives the identifier.
func (r wildchatRecord) conversation() *conv.Conversation {
	c := &conv.Conversation{}
	for _, m := range r.Conversation {
		c.Messages = append(c.Messages, conv.Message{Role: conv.Role(m.Role), Content: m.Content})
	}
	return c
}

// agreement counts, per language of the dataset's field, how many
// conversations the identifier gives the same language.
type agreement struct {
	agree, total int
	byLang       map[string][2]int // agree, total
}

func (a *agreement) add(want, got string) {
	if a.byLang == nil {
		a.byLang = map[string][2]int{}
	}
	x := a.byLang[want]
	x[1]++
	a.total++
	if got == want {
		x[0]++
		a.agree++
	}
	a.byLang[want] = x
}

func (a agreement) String() string {
	langs := make([]string, 0, len(a.byLang))
	for l := range a.byLang {
		langs = append(langs, l)
	}
	sort.Slice(langs, func(i, j int) bool {
		if a.byLang[langs[i]][1] != a.byLang[langs[j]][1] {
			return a.byLang[langs[i]][1] > a.byLang[langs[j]][1]
		}
		return langs[i] < langs[j]
	})
	var parts []string
	for _, l := range langs {
		parts = append(parts, fmt.Sprintf("%s %d/%d", l, a.byLang[l][0], a.byLang[l][1]))
	}
	return fmt.Sprintf("%d/%d (%.0f%%): %s", a.agree, a.total, 100*float64(a.agree)/float64(a.total), strings.Join(parts, ", "))
}

// TestAgreementWithWildChat measures how often the identifier gives the
// language WildChat's own field gives, on the bundled sample of 10
// conversations and the 50 it was taken from: per conversation (what
// --language compares), and per user message against each message's own
// field. The counts are the README's; a change of detector or of what it
// reads shows here first, and the README must follow.
//
//	go test -run TestAgreementWithWildChat -v ./stages/filter/
func TestAgreementWithWildChat(t *testing.T) {
	tests := []struct {
		file                  string
		convAgree, convTotal  int
		msgAgree, msgTotal    int
		englishAgree, english int
	}{
		{"../../fixtures/wildchat/wildchat-1m-sample10.jsonl", 10, 10, 36, 43, 7, 7},
		{"../../fixtures/wildchat/wildchat-1m-sample50.jsonl", 47, 50, 212, 258, 31, 31},
	}
	for _, tt := range tests {
		t.Run(tt.file[strings.LastIndex(tt.file, "/")+1:], func(t *testing.T) {
			recs := readWildChat(t, tt.file)
			var convs, msgs agreement
			for _, r := range recs {
				got, _, _ := filter.Identify(r.conversation())
				convs.add(r.Language, got)
				for _, m := range r.Conversation {
					if m.Role != "user" {
						continue
					}
					got, _, _ := filter.Identify(&conv.Conversation{Messages: []conv.Message{{Role: conv.User, Content: m.Content}}})
					msgs.add(m.Language, got)
				}
			}
			t.Logf("%s (%s)", tt.file, filter.Detector)
			t.Logf("  conversations, first %d bytes of the user turns: %v", filter.IdentifyBytes, convs)
			t.Logf("  user messages, each on its own:                 %v", msgs)
			check := func(what string, got, want int) {
				if got != want {
					t.Errorf("%s: %d, the README says %d: update the README's language figures (and this test) if the change is intended", what, got, want)
				}
			}
			check("conversations read", convs.total, tt.convTotal)
			check("conversations agreeing", convs.agree, tt.convAgree)
			check("user messages read", msgs.total, tt.msgTotal)
			check("user messages agreeing", msgs.agree, tt.msgAgree)
			check("English conversations read", convs.byLang["English"][1], tt.english)
			check("English conversations agreeing", convs.byLang["English"][0], tt.englishAgree)
		})
	}
}

// BenchmarkIdentify measures identification per conversation on the 50
// real WildChat conversations (conversations/s is what matters at millions).
func BenchmarkIdentify(b *testing.B) {
	recs := readWildChat(b, "../../fixtures/wildchat/wildchat-1m-sample50.jsonl")
	convs := make([]*conv.Conversation, len(recs))
	for i, r := range recs {
		convs[i] = r.conversation()
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		filter.Identify(convs[n%len(convs)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "conv/s")
}
