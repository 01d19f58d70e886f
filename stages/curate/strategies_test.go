package curate_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate"
	"github.com/ac3/ac3/stages/curate/curated"
)

// Shorthands for expected parts.
func ref(i int) curated.Part { return curated.MessagePart(i) }
func refs(from, to int) []curated.Part {
	var ps []curated.Part
	for i := from; i <= to; i++ {
		ps = append(ps, ref(i))
	}
	return ps
}
func sys() curated.Part { return curated.SystemPart() }
func ph(role conv.Role) curated.Part {
	return curated.TextPart(role, curate.DefaultPlaceholder)
}
func note(join bool) curated.Part {
	p := curated.TextPart(conv.System, curate.DefaultNote)
	p.Join = join
	return p
}
func joined(i int) curated.Part { p := ref(i); p.Join = true; return p }
func cat(groups ...any) []curated.Part {
	var ps []curated.Part
	for _, g := range groups {
		switch g := g.(type) {
		case curated.Part:
			ps = append(ps, g)
		case []curated.Part:
			ps = append(ps, g...)
		}
	}
	return ps
}

var (
	// plain: no system message, three full exchanges.
	plain = build("plain", "",
		"user", "What is the capital of France?", "assistant", "Paris.",
		"user", "And of Spain?", "assistant", "Madrid.",
		"user", "Thanks! Which is larger?", "assistant", "Madrid, by population.")
	// withSystem: a system message and a trailing user message with no reply.
	withSystem = build("sys", "You are terse.",
		"user", "Write a haiku about rain.", "assistant", "Soft rain on the roof\nthe gutters hum a low tune\nstreets shine, then go dark",
		"user", "Now one about snow.", "assistant", "White hush on the field",
		"user", "Make it longer.")
	// consecutive: two user messages in a row, the first unanswered.
	consecutive = build("consec", "",
		"user", "I have a question about Go.", "user", "How do I reverse a slice?",
		"assistant", "Use slices.Reverse(s).", "user", "Does it allocate?", "assistant", "No, it works in place.")
	// tools: a tool call between two assistant messages.
	tools = build("tools", "Use tools when helpful.",
		"user", "What's the weather in Oslo?", "assistant", "Let me check.", "tool", `{"temp_c": 3, "sky": "overcast"}`,
		"assistant", "3 °C and overcast.", "user", "Should I take an umbrella?", "assistant", "Probably not.")
)

func TestStrategies(t *testing.T) {
	cases := []struct {
		name     string
		strategy string
		c        *conv.Conversation
		from     int
		want     [][]curated.Part // one per turn from `from` on
	}{
		{"fc plain", "fc", plain, 1, [][]curated.Part{refs(0, 0), refs(0, 2), refs(0, 4)}},
		{"fc system, trailing user", "fc", withSystem, 2, [][]curated.Part{cat(sys(), refs(0, 2)), cat(sys(), refs(0, 4))}},
		{"fc consecutive users", "fc", consecutive, 1, [][]curated.Part{refs(0, 0), refs(0, 1), refs(0, 3)}},
		{"fc keeps tool messages", "fc", tools, 2, [][]curated.Part{cat(sys(), refs(0, 4))}},

		{"ao plain", "ao", plain, 1, [][]curated.Part{
			refs(0, 0),
			cat(note(false), ref(0), ph(conv.Assistant), ref(2)),
			cat(note(false), ref(0), ph(conv.Assistant), ref(2), ph(conv.Assistant), ref(4)),
		}},
		{"ao joins the note to the system message", "ao", withSystem, 1, [][]curated.Part{
			cat(sys(), ref(0)),
			cat(sys(), note(true), ref(0), ph(conv.Assistant), ref(2)),
			cat(sys(), note(true), ref(0), ph(conv.Assistant), ref(2), ph(conv.Assistant), ref(4)),
		}},
		{"ao consecutive users: no note before the first reply", "ao", consecutive, 1, [][]curated.Part{
			refs(0, 0), refs(0, 1),
			cat(note(false), ref(0), ref(1), ph(conv.Assistant), ref(3)),
		}},
		{"ao hides tool results too", "ao", tools, 2, [][]curated.Part{
			cat(sys(), note(true), ref(0), ph(conv.Assistant), ph(conv.Tool), ph(conv.Assistant), ref(4)),
		}},

		{"lt plain", "lt", plain, 1, [][]curated.Part{refs(0, 0), refs(0, 2), refs(2, 4)}},
		{"lt system", "lt", withSystem, 2, [][]curated.Part{cat(sys(), refs(0, 2)), cat(sys(), refs(2, 4))}},
		{"lt after an unanswered user message", "lt", consecutive, 2, [][]curated.Part{refs(0, 1), refs(1, 3)}},
		{"lt keeps the whole previous exchange", "lt", tools, 2, [][]curated.Part{cat(sys(), refs(0, 4))}},

		{"de plain", "de", plain, 1, [][]curated.Part{{ref(0)}, {ref(2)}, {ref(4)}}},
		{"de system", "de", withSystem, 3, [][]curated.Part{{sys(), ref(4)}}},
		{"de tools", "de", tools, 1, [][]curated.Part{{sys(), ref(0)}, {sys(), ref(4)}}},

		{"concat plain", "concat", plain, 1, [][]curated.Part{
			{ref(0)}, {ref(0), joined(2)}, {ref(0), joined(2), joined(4)},
		}},
		{"concat system", "concat", withSystem, 3, [][]curated.Part{{sys(), ref(0), joined(2), joined(4)}}},
		{"concat consecutive", "concat", consecutive, 2, [][]curated.Part{{ref(0), joined(1)}, {ref(0), joined(1), joined(3)}}},
		{"concat drops tool messages", "concat", tools, 2, [][]curated.Part{{sys(), ref(0), joined(4)}}},

		{"from beyond the last turn", "fc", plain, 9, nil},
		{"from 0 counts as 1", "de", plain, 0, [][]curated.Part{{ref(0)}, {ref(2)}, {ref(4)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			xs := curateAll(t, mustStrategy(t, tc.strategy), tc.c, tc.from)
			if len(xs) != len(tc.want) {
				t.Fatalf("got %d contexts, want %d", len(xs), len(tc.want))
			}
			for k, x := range xs {
				if x.Strategy != tc.strategy || x.Turn != max(tc.from, 1)+k {
					t.Errorf("context %d is %s turn %d", k, x.Strategy, x.Turn)
				}
				if !reflect.DeepEqual(x.Parts, tc.want[k]) {
					t.Errorf("turn %d parts:\n got %+v\nwant %+v", x.Turn, x.Parts, tc.want[k])
				}
				checkContext(t, tc.c, x)
			}
		})
	}
}

// checkContext checks what must hold for every context: it validates, its
// counts match its materialized messages counted directly, it ends with u_t,
// and it survives the storage codec.
func checkContext(t *testing.T, c *conv.Conversation, x curated.Context) {
	t.Helper()
	if err := curated.Validate(c, x.Parts); err != nil {
		t.Fatalf("turn %d: %v", x.Turn, err)
	}
	msgs := curated.Materialize(c, x.Parts)
	if x.Messages != len(msgs) {
		t.Errorf("turn %d: Messages = %d, materialized %d", x.Turn, x.Messages, len(msgs))
	}
	if want := counter(t).CountMessages(msgs); x.Tokens != want {
		t.Errorf("turn %d: Tokens = %d, counting the materialized messages gives %d", x.Turn, x.Tokens, want)
	}
	if got := curate.NewWorkspace(c, counter(t)).Total(x.Parts); got != x.Tokens {
		t.Errorf("turn %d: Workspace.Total = %d, strategy said %d", x.Turn, got, x.Tokens)
	}
	ut, _ := c.UserTurn(x.Turn)
	lastMsg := msgs[len(msgs)-1]
	if lastMsg.Role != conv.User || !strings.HasSuffix(lastMsg.Content, ut.Content) {
		t.Errorf("turn %d: context does not end with u_t: %+v", x.Turn, lastMsg)
	}
	if c.System != "" && (msgs[0].Role != conv.System || !strings.HasPrefix(msgs[0].Content, c.System)) {
		t.Errorf("turn %d: system message not kept first: %+v", x.Turn, msgs[0])
	}
	data, err := curated.EncodeContext(x)
	if err != nil {
		t.Fatal(err)
	}
	back, err := curated.DecodeContext(data)
	if err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	if x.Parts == nil {
		x.Parts = []curated.Part{}
	}
	if !reflect.DeepEqual(back, x) {
		t.Errorf("codec round trip:\n got %+v\nwant %+v\n via %s", back, x, data)
	}
}

func TestMaterialize(t *testing.T) {
	xs := curateAll(t, mustStrategy(t, "ao"), withSystem, 3)
	got := curated.Materialize(withSystem, xs[0].Parts)
	want := []conv.Message{
		{Role: conv.System, Content: "You are terse.\n\n" + curate.DefaultNote},
		{Role: conv.User, Content: "Write a haiku about rain."},
		{Role: conv.Assistant, Content: curate.DefaultPlaceholder},
		{Role: conv.User, Content: "Now one about snow."},
		{Role: conv.Assistant, Content: curate.DefaultPlaceholder},
		{Role: conv.User, Content: "Make it longer."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ao materialized:\n got %q\nwant %q", got, want)
	}

	xs = curateAll(t, mustStrategy(t, "concat"), consecutive, 3)
	got = curated.Materialize(consecutive, xs[0].Parts)
	want = []conv.Message{{Role: conv.User, Content: "I have a question about Go.\n\nHow do I reverse a slice?\n\nDoes it allocate?"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("concat materialized:\n got %q\nwant %q", got, want)
	}

	// fc at the last turn is exactly C_t.
	xs = curateAll(t, mustStrategy(t, "fc"), tools, 2)
	ct, _ := tools.ContextBefore(2)
	if got := curated.Materialize(tools, xs[0].Parts); !reflect.DeepEqual(got, ct) {
		t.Errorf("fc differs from ContextBefore:\n got %q\nwant %q", got, ct)
	}
}

func TestContextsShareNoMutableTail(t *testing.T) {
	// Contexts of successive turns share a backing array; appending to one
	// must not change another.
	xs := curateAll(t, mustStrategy(t, "fc"), plain, 1)
	before := append([]curated.Part(nil), xs[1].Parts...)
	_ = append(xs[0].Parts, curated.TextPart(conv.User, "extra"))
	if !reflect.DeepEqual(xs[1].Parts, before) {
		t.Errorf("appending to turn 1's parts changed turn 2's: %+v", xs[1].Parts)
	}
}

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name  string
		c     *conv.Conversation
		parts []curated.Part
		want  string
	}{
		{"out of range", plain, []curated.Part{ref(6)}, "out of range"},
		{"system without one", plain, []curated.Part{sys()}, "no system message"},
		{"literal without role", plain, []curated.Part{{Ref: curated.RefText, Text: "x"}}, "role"},
		{"first part joins", plain, []curated.Part{joined(0)}, "first part"},
		{"join across roles", plain, []curated.Part{ref(0), joined(1)}, "cannot join"},
		{"role on a reference", plain, []curated.Part{{Ref: 0, Role: conv.User}}, "only literal"},
		{"filler on system", withSystem, []curated.Part{{Ref: curated.RefSystem, Fill: 3}}, "fill"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := curated.Validate(tc.c, tc.parts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}
