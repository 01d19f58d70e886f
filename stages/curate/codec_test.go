package curate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate"
)

func TestEncodeContextIsCompact(t *testing.T) {
	c := &conv.Conversation{ID: "long", System: "sys"}
	for i := range 60 {
		role := conv.User
		if i%2 == 1 {
			role = conv.Assistant
		}
		c.Messages = append(c.Messages, conv.Message{Role: role, Content: strings.Repeat("text ", 500)})
	}
	c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: "last"})
	xs := curateAll(t, mustStrategy(t, "fc"), c, 31)
	x := xs[len(xs)-1]
	data, err := curate.EncodeContext(x)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"v":1,"s":"fc","t":31,"k":%d,"n":62,"p":[-1,[0,60]]}`, x.Tokens)
	if string(data) != want {
		t.Errorf("fc encoding:\n got %s\nwant %s", data, want)
	}
	checkContext(t, c, x)
}

func TestDecodeContextRejects(t *testing.T) {
	for _, bad := range []string{
		`not json`,
		`{"v":2,"s":"fc","t":1,"k":1,"n":1,"p":[0]}`,
		`{"v":1,"s":"fc","t":1,"k":1,"n":1,"p":[[3,1]]}`,
		`{"v":1,"s":"fc","t":1,"k":1,"n":1,"p":[-3]}`,
		`{"v":1,"s":"fc","t":1,"k":1,"n":1,"p":["x"]}`,
	} {
		if _, err := curate.DecodeContext([]byte(bad)); err == nil {
			t.Errorf("DecodeContext(%s) succeeded", bad)
		}
	}
}

func FuzzDecodeContext(f *testing.F) {
	f.Add([]byte(`{"v":1,"s":"ao","t":2,"k":40,"n":4,"p":[{"r":"system","x":"note"},0,{"r":"assistant","x":"[x]"},2]}`))
	f.Add([]byte(`{"v":1,"s":"concat","t":3,"k":9,"n":1,"p":[0,{"i":2,"j":1},{"i":4,"j":1,"f":3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := curate.DecodeContext(data)
		if err != nil {
			return
		}
		again, err := curate.EncodeContext(x)
		if err != nil {
			t.Fatal(err)
		}
		y, err := curate.DecodeContext(again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if fmt.Sprint(x) != fmt.Sprint(y) {
			t.Fatalf("round trip changed the context:\n%+v\n%+v", x, y)
		}
	})
}
