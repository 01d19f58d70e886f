package curate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
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
	data, err := curated.EncodeContext(x)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"v":1,"s":"fc","t":31,"k":%d,"n":62,"p":[-1,[0,60]]}`, x.Tokens)
	if string(data) != want {
		t.Errorf("fc encoding:\n got %s\nwant %s", data, want)
	}
	checkContext(t, c, x)
}
