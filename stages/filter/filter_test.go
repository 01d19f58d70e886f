package filter_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/filter"
)

// chat builds a conversation with one user and one assistant message per
// user text.
func chat(users ...string) *conv.Conversation {
	c := &conv.Conversation{ID: "c", Format: "wildchat", Language: "English"}
	for _, u := range users {
		c.Messages = append(c.Messages,
			conv.Message{Role: conv.User, Content: u},
			conv.Message{Role: conv.Assistant, Content: "Sure, here is an answer."})
	}
	return c
}

func mustNew(tb testing.TB, o filter.Options) *filter.Filter {
	tb.Helper()
	f, err := filter.New(o)
	if err != nil {
		tb.Fatalf("New(%+v): %v", o, err)
	}
	return f
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		opts   filter.Options
		fields []string // the fields named by the errors, in order
		substr string   // a fragment the message must contain
	}{
		{name: "zero value is valid", opts: filter.Options{}},
		{name: "the protocol is valid", opts: filter.Options{
			Languages: []string{"English"}, MinUserTurns: 5, MaxUserTurns: 10,
			Domains: []string{"coding", "Math"}, DropToxic: true, DropRedacted: true,
			MaxMessageBytes: 200000, UnknownLanguage: "drop"}},
		{name: "min equal to max is valid", opts: filter.Options{MinUserTurns: 3, MaxUserTurns: 3}},
		{name: "min without max is valid", opts: filter.Options{MinUserTurns: 30}},
		{name: "negative min", opts: filter.Options{MinUserTurns: -1},
			fields: []string{"MinUserTurns"}, substr: "negative"},
		{name: "negative max", opts: filter.Options{MaxUserTurns: -2},
			fields: []string{"MaxUserTurns"}, substr: "negative"},
		{name: "min greater than max", opts: filter.Options{MinUserTurns: 7, MaxUserTurns: 5},
			fields: []string{"MinUserTurns"}, substr: "7 is greater than MaxUserTurns (5)"},
		{name: "negative message size", opts: filter.Options{MaxMessageBytes: -1},
			fields: []string{"MaxMessageBytes"}, substr: "negative"},
		{name: "unknown domain lists the valid ones", opts: filter.Options{Domains: []string{"coding", "cooking"}},
			fields: []string{"Domains"},
			substr: `unknown domain "cooking"; valid domains: creative_writing, science_medical, business_finance, education, math, coding`},
		{name: "empty language", opts: filter.Options{Languages: []string{"en", " "}},
			fields: []string{"Languages"}, substr: "entry 1 is empty"},
		{name: "bad unknown-language policy", opts: filter.Options{Languages: []string{"en"}, UnknownLanguage: "maybe"},
			fields: []string{"UnknownLanguage"}, substr: `"maybe" is not "keep" or "drop"`},
		{name: "drop policy without languages", opts: filter.Options{UnknownLanguage: "drop"},
			fields: []string{"UnknownLanguage"}, substr: "needs Languages"},
		{name: "every bad field is reported", opts: filter.Options{MinUserTurns: -1, MaxUserTurns: -1, MaxMessageBytes: -1, Domains: []string{"x"}},
			fields: []string{"MinUserTurns", "MaxUserTurns", "Domains", "MaxMessageBytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors for %v", tt.fields)
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *filter.FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("error %v is not a *FieldError", e)
				}
				got = append(got, fe.Field)
				if !strings.Contains(e.Error(), "filter option "+fe.Field+": ") {
					t.Errorf("error %q does not name its field", e)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("fields = %v, want %v", got, tt.fields)
			}
			if !strings.Contains(err.Error(), tt.substr) {
				t.Errorf("error %q does not contain %q", err, tt.substr)
			}
			if _, nerr := filter.New(tt.opts); nerr == nil {
				t.Error("New accepted options that Validate rejects")
			}
		})
	}
}

func TestReasons(t *testing.T) {
	want := []filter.Reason{"duplicate", "language", "too_few_turns", "too_many_turns",
		"toxic", "redacted", "message_too_large", "domain"}
	got := filter.AllReasons()
	if len(got) != len(want) {
		t.Fatalf("AllReasons() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("AllReasons()[%d] = %q, want %q", i, got[i], want[i])
		}
	}
	got[0] = "changed"
	if filter.AllReasons()[0] != filter.ReasonDuplicate {
		t.Error("AllReasons returns a shared slice")
	}
}

func TestCheckEachFilter(t *testing.T) {
	tech := "my python script throws an error"
	with := func(c *conv.Conversation, edit func(*conv.Conversation)) *conv.Conversation {
		edit(c)
		return c
	}
	tests := []struct {
		name string
		opts filter.Options
		c    *conv.Conversation
		want filter.Reason // "" means kept
	}{
		{"zero options keep everything", filter.Options{},
			with(chat(), func(c *conv.Conversation) { c.Toxic, c.Redacted, c.Language = true, true, "Klingon" }), ""},

		{"language matches by name", filter.Options{Languages: []string{"English"}}, chat(tech), ""},
		{"language ignores case", filter.Options{Languages: []string{"english"}},
			with(chat(tech), func(c *conv.Conversation) { c.Language = "ENGLISH" }), ""},
		{"language by ISO code", filter.Options{Languages: []string{"en"}}, chat(tech), ""},
		{"other language dropped", filter.Options{Languages: []string{"en"}},
			with(chat(tech), func(c *conv.Conversation) { c.Language = "Spanish" }), filter.ReasonLanguage},
		{"one of several languages", filter.Options{Languages: []string{"fr", "Spanish"}},
			with(chat(tech), func(c *conv.Conversation) { c.Language = "Spanish" }), ""},
		{"record with a code", filter.Options{Languages: []string{"English"}},
			with(chat(tech), func(c *conv.Conversation) { c.Language = "en" }), ""},
		{"record with a region tag", filter.Options{Languages: []string{"English"}},
			with(chat(tech), func(c *conv.Conversation) { c.Language = "en-GB" }), ""},
		{"unlisted name compared as written", filter.Options{Languages: []string{"Latin"}},
			with(chat(tech), func(c *conv.Conversation) { c.Language = "latin" }), ""},
		{"unknown language kept by default", filter.Options{Languages: []string{"en"}},
			with(chat(tech), func(c *conv.Conversation) { c.Language = "" }), ""},
		{"unknown language kept by policy", filter.Options{Languages: []string{"en"}, UnknownLanguage: "keep"},
			with(chat(tech), func(c *conv.Conversation) { c.Language = " " }), ""},
		{"unknown language dropped by policy", filter.Options{Languages: []string{"en"}, UnknownLanguage: "Drop"},
			with(chat(tech), func(c *conv.Conversation) { c.Language = "" }), filter.ReasonLanguage},

		{"too few turns", filter.Options{MinUserTurns: 2}, chat(tech), filter.ReasonTooFewTurns},
		{"no user turns at all", filter.Options{MinUserTurns: 1}, &conv.Conversation{}, filter.ReasonTooFewTurns},
		{"exactly min", filter.Options{MinUserTurns: 2}, chat(tech, "ok"), ""},
		{"exactly max", filter.Options{MaxUserTurns: 2}, chat(tech, "ok"), ""},
		{"too many turns", filter.Options{MaxUserTurns: 2}, chat(tech, "ok", "more"), filter.ReasonTooManyTurns},
		{"assistant messages are not turns", filter.Options{MaxUserTurns: 1},
			with(chat(tech), func(c *conv.Conversation) {
				c.Messages = append(c.Messages, conv.Message{Role: conv.Assistant, Content: "and more"})
			}), ""},

		{"toxic dropped", filter.Options{DropToxic: true},
			with(chat(tech), func(c *conv.Conversation) { c.Toxic = true }), filter.ReasonToxic},
		{"toxic kept when not asked", filter.Options{DropRedacted: true},
			with(chat(tech), func(c *conv.Conversation) { c.Toxic = true }), ""},
		{"redacted dropped", filter.Options{DropRedacted: true},
			with(chat(tech), func(c *conv.Conversation) { c.Redacted = true }), filter.ReasonRedacted},
		{"redacted kept when not asked", filter.Options{DropToxic: true},
			with(chat(tech), func(c *conv.Conversation) { c.Redacted = true }), ""},

		// The assistant reply of chat is 24 bytes.
		{"message at the limit", filter.Options{MaxMessageBytes: 24}, chat(strings.Repeat("x", 24)),
			""},
		{"user message over the limit", filter.Options{MaxMessageBytes: 24}, chat(strings.Repeat("x", 25)),
			filter.ReasonMessageTooLarge},
		{"assistant message over the limit", filter.Options{MaxMessageBytes: 20}, chat("hi"),
			filter.ReasonMessageTooLarge},
		{"system message over the limit", filter.Options{MaxMessageBytes: 30},
			with(chat("hi"), func(c *conv.Conversation) { c.System = strings.Repeat("x", 31) }),
			filter.ReasonMessageTooLarge},
		{"limit counts bytes, not runes", filter.Options{MaxMessageBytes: 30}, chat(strings.Repeat("é", 12)),
			""},

		{"domain matched", filter.Options{Domains: []string{"coding"}}, chat(tech), ""},
		{"domain in a later turn", filter.Options{Domains: []string{"math"}}, chat("hello", "solve this equation"), ""},
		{"domain not matched", filter.Options{Domains: []string{"math"}}, chat(tech), filter.ReasonDomain},
		{"any listed domain will do", filter.Options{Domains: []string{"math", "coding"}}, chat(tech), ""},
		{"domain names ignore case", filter.Options{Domains: []string{"Coding"}}, chat(tech), ""},
		{"assistant text is not scanned", filter.Options{Domains: []string{"coding"}},
			with(chat("hello"), func(c *conv.Conversation) { c.Messages[1].Content = "here is python code" }),
			filter.ReasonDomain},
		{"system text is not scanned", filter.Options{Domains: []string{"coding"}},
			with(chat("hello"), func(c *conv.Conversation) { c.System = "you write python code" }),
			filter.ReasonDomain},
		{"no user messages", filter.Options{Domains: []string{"coding"}}, &conv.Conversation{}, filter.ReasonDomain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustNew(t, tt.opts)
			keep, reason := f.Check(tt.c)
			if reason != tt.want || keep != (tt.want == "") {
				t.Errorf("Check() = %v, %q; want %v, %q", keep, reason, tt.want == "", tt.want)
			}
		})
	}
}

// TestCheckOrder fails one filter more at each step and checks that the
// reported reason is always the earliest failing one.
func TestCheckOrder(t *testing.T) {
	opts := filter.Options{
		Languages: []string{"en"}, MinUserTurns: 2, MaxUserTurns: 3,
		Domains: []string{"math"}, DropToxic: true, DropRedacted: true, MaxMessageBytes: 100,
	}
	f := mustNew(t, opts)

	// Each breaker makes the conversation fail exactly one filter.
	breakers := []struct {
		reason filter.Reason
		apply  func(*conv.Conversation)
	}{
		{filter.ReasonLanguage, func(c *conv.Conversation) { c.Language = "German" }},
		{filter.ReasonTooFewTurns, func(c *conv.Conversation) { c.Messages = c.Messages[:2] }},
		{filter.ReasonTooManyTurns, func(c *conv.Conversation) {
			c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: "a"}, conv.Message{Role: conv.User, Content: "b"})
		}},
		{filter.ReasonToxic, func(c *conv.Conversation) { c.Toxic = true }},
		{filter.ReasonRedacted, func(c *conv.Conversation) { c.Redacted = true }},
		{filter.ReasonMessageTooLarge, func(c *conv.Conversation) {
			c.Messages = append(c.Messages, conv.Message{Role: conv.Assistant, Content: strings.Repeat("x", 101)})
		}},
		{filter.ReasonDomain, func(c *conv.Conversation) {
			for i := range c.Messages {
				if c.Messages[i].Role == conv.User {
					c.Messages[i].Content = "hello there"
				}
			}
		}},
	}
	// Check's order is AllReasons without the duplicate reason.
	order := filter.AllReasons()[1:]
	for i, b := range breakers {
		if order[i] != b.reason {
			t.Fatalf("check order %v does not match AllReasons %v", b.reason, order)
		}
	}

	base := func() *conv.Conversation { return chat("solve this equation", "and the next one") }
	if keep, reason := f.Check(base()); !keep {
		t.Fatalf("the base conversation is dropped (%q)", reason)
	}
	// Every subset of breakers: the earliest one applied must win. Apply the
	// domain breaker first so later ones (extra turns) do not bring keywords.
	for set := 1; set < 1<<len(breakers); set++ {
		c := base()
		var want filter.Reason
		for i := len(breakers) - 1; i >= 0; i-- {
			if set&(1<<i) != 0 {
				breakers[i].apply(c)
				want = breakers[i].reason
			}
		}
		if keep, reason := f.Check(c); keep || reason != want {
			t.Errorf("breakers %07b: Check() = %v, %q; want false, %q", set, keep, reason, want)
		}
	}
}

func TestLanguageCodes(t *testing.T) {
	tests := []struct{ option, record string }{
		{"en", "English"}, {"eng", "English"}, {"EN-us", "English"},
		{"es", "Spanish"}, {"zh", "Chinese"}, {"zh_Hans", "Chinese"}, {"chi", "Chinese"},
		{"fr", "French"}, {"de", "German"}, {"ger", "German"}, {"ru", "Russian"},
		{"pt", "Portuguese"}, {"it", "Italian"}, {"ja", "Japanese"}, {"ko", "Korean"},
		{"ar", "Arabic"}, {"tr", "Turkish"}, {"vi", "Vietnamese"}, {"uk", "Ukrainian"},
		// The record may carry a code while the option names the language.
		{"German", "de"}, {"Chinese", "zh-CN"}, {"chinese", "ZHO"},
	}
	for _, tt := range tests {
		t.Run(tt.option+" accepts "+tt.record, func(t *testing.T) {
			f := mustNew(t, filter.Options{Languages: []string{tt.option}})
			c := chat("hi")
			c.Language = tt.record
			if keep, reason := f.Check(c); !keep {
				t.Errorf("dropped (%q)", reason)
			}
			c.Language = "Klingon"
			if keep, _ := f.Check(c); keep {
				t.Error("kept a conversation in another language")
			}
		})
	}
	// Codes of different languages must not leak into each other.
	f := mustNew(t, filter.Options{Languages: []string{"en"}})
	for _, other := range []string{"es", "Englishman", "e", "n"} {
		c := chat("hi")
		c.Language = other
		if keep, _ := f.Check(c); keep {
			t.Errorf("language %q accepted by en", other)
		}
	}
}

func TestLanguageKnown(t *testing.T) {
	f := mustNew(t, filter.Options{})
	for lang, want := range map[string]bool{"English": true, "": false, "  ": false, "en": true} {
		c := chat("hi")
		c.Language = lang
		if got := f.LanguageKnown(c); got != want {
			t.Errorf("LanguageKnown(%q) = %v, want %v", lang, got, want)
		}
	}
}

func TestCheckDoesNotAllocate(t *testing.T) {
	f := mustNew(t, filter.Options{
		Languages: []string{"en", "fr"}, MinUserTurns: 1, MaxUserTurns: 10,
		Domains: []string{"coding", "math"}, DropToxic: true, DropRedacted: true, MaxMessageBytes: 1 << 20,
	})
	kept, dropped := chat("fix my python code"), chat("tell me a joke")
	if n := testing.AllocsPerRun(100, func() {
		f.Check(kept)
		f.Check(dropped)
	}); n != 0 {
		t.Errorf("Check allocates %v times per call", n)
	}
}

// TestConcurrentCheck is for -race: one Filter, many goroutines.
func TestConcurrentCheck(t *testing.T) {
	f := mustNew(t, filter.Options{Languages: []string{"en"}, Domains: []string{"coding"}})
	convs := []*conv.Conversation{chat("python bug"), chat("a poem"), chat("hi", "my script")}
	want := make([]bool, len(convs))
	for i, c := range convs {
		want[i], _ = f.Check(c)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				for i, c := range convs {
					if keep, _ := f.Check(c); keep != want[i] {
						t.Errorf("conversation %d: got %v", i, keep)
						return
					}
					_ = filter.Classify(c)
				}
			}
		})
	}
	wg.Wait()
}
