package conv_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
)

func sample() *conv.Conversation {
	return &conv.Conversation{
		ID:     "c1",
		System: "be brief",
		Messages: []conv.Message{
			{Role: conv.User, Content: "u1"},
			{Role: conv.Assistant, Content: "a1 SECRET-ASSISTANT"},
			{Role: conv.Tool, Content: "tool SECRET-TOOL"},
			{Role: conv.Assistant, Content: "a1b SECRET-ASSISTANT"},
			{Role: conv.User, Content: "u2"},
			{Role: conv.User, Content: "u3"},
			{Role: conv.Assistant, Content: "a3 SECRET-ASSISTANT"},
			{Role: conv.User, Content: "u4"},
		},
	}
}

func TestTurns(t *testing.T) {
	got := sample().Turns()
	want := []conv.Turn{
		{Index: 1, User: 0, Reply: 1, End: 4},
		{Index: 2, User: 4, Reply: -1, End: 5},
		{Index: 3, User: 5, Reply: 6, End: 7},
		{Index: 4, User: 7, Reply: -1, End: 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Turns() = %+v\nwant %+v", got, want)
	}
	if n := sample().UserTurns(); n != 4 {
		t.Errorf("UserTurns() = %d", n)
	}
}

func TestContextBefore(t *testing.T) {
	tests := []struct {
		name  string
		turn  int
		ok    bool
		roles string
	}{
		{"first turn has the system message and u1", 1, true, "system user"},
		{"third turn has all before u3", 3, true, "system user assistant tool assistant user user"},
		{"missing turn", 9, false, ""},
		{"turn zero", 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, ok := sample().ContextBefore(tt.turn)
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			var roles []string
			for _, m := range msgs {
				roles = append(roles, string(m.Role))
			}
			if got := strings.Join(roles, " "); got != tt.roles {
				t.Errorf("roles = %q, want %q", got, tt.roles)
			}
		})
	}
	if u, ok := sample().UserTurn(3); !ok || u.Content != "u3" {
		t.Errorf("UserTurn(3) = %v %v", u, ok)
	}
}

// TestUserViewCannotHoldAssistantText is the structural-exclusion guarantee:
// whatever the conversation holds, a UserView built from it carries only the
// system message and user messages, and the type has no exported field
// through which other text could be put in.
func TestUserViewCannotHoldAssistantText(t *testing.T) {
	c := sample()
	for turn := 0; turn <= 5; turn++ {
		v := conv.NewUserView(c, turn)
		var all []string
		all = append(all, v.System())
		all = append(all, v.Users()...)
		for _, m := range v.Messages() {
			all = append(all, string(m.Role)+" "+m.Content)
			if m.Role != conv.User && m.Role != conv.System {
				t.Errorf("turn %d: view has a %s message", turn, m.Role)
			}
		}
		for _, s := range all {
			if strings.Contains(s, "SECRET") {
				t.Fatalf("turn %d: assistant or tool text reached the user view: %q", turn, s)
			}
		}
		if want := min(turn, 4); v.Len() != want {
			t.Errorf("turn %d: Len() = %d, want %d", turn, v.Len(), want)
		}
	}
	v := conv.NewUserView(c, 3)
	if got := strings.Join(v.Users(), ","); got != "u1,u2,u3" || v.User(2) != "u2" {
		t.Errorf("Users() = %q", got)
	}

	typ := reflect.TypeOf(conv.UserView{})
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			t.Errorf("UserView has exported field %s: code outside conv could fill it with anything", f.Name)
		}
	}
	// Users returns a copy: changing it cannot change the view.
	u := v.Users()
	u[0] = "SECRET-ASSISTANT"
	if v.User(1) != "u1" {
		t.Error("changing the slice Users returned changed the view")
	}
}

func TestContentHashIgnoresSourceAndMeta(t *testing.T) {
	a, b := sample(), sample()
	b.ID, b.Source.File, b.Meta = "other", "x.jsonl", []byte(`{"k":1}`)
	if a.ContentHash() != b.ContentHash() {
		t.Error("same messages hashed differently")
	}
	b.Messages[0].Content = "u1 "
	if a.ContentHash() == b.ContentHash() {
		t.Error("different messages hashed the same")
	}
	// Moving text across the boundary of two messages changes the hash.
	x := &conv.Conversation{Messages: []conv.Message{{Role: conv.User, Content: "ab"}, {Role: conv.User, Content: "c"}}}
	y := &conv.Conversation{Messages: []conv.Message{{Role: conv.User, Content: "a"}, {Role: conv.User, Content: "bc"}}}
	if x.ContentHash() == y.ContentHash() {
		t.Error("message boundaries do not count in the hash")
	}
}

func TestParseRole(t *testing.T) {
	for _, r := range []string{"system", "user", "assistant", "tool"} {
		if _, ok := conv.ParseRole(r); !ok {
			t.Errorf("ParseRole(%q) failed", r)
		}
	}
	for _, r := range []string{"", "User", "bot", "function"} {
		if _, ok := conv.ParseRole(r); ok {
			t.Errorf("ParseRole(%q) succeeded", r)
		}
	}
}

func TestSize(t *testing.T) {
	c := &conv.Conversation{System: "sys", Meta: []byte(`{"a":1}`), Messages: []conv.Message{
		{Role: conv.User, Content: "hello"}, {Role: conv.Assistant, Content: "hi there"},
	}}
	if got, want := c.Size(), 3+7+5+8; got != want {
		t.Errorf("Size = %d, want %d", got, want)
	}
}
