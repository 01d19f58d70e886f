package curated_test

import (
	"fmt"
	"testing"

	"github.com/ac3/ac3/stages/curate/curated"
)

func TestDecodeContextRejects(t *testing.T) {
	for _, bad := range []string{
		`not json`,
		`{"v":2,"s":"fc","t":1,"k":1,"n":1,"p":[0]}`,
		`{"v":1,"s":"fc","t":1,"k":1,"n":1,"p":[[3,1]]}`,
		`{"v":1,"s":"fc","t":1,"k":1,"n":1,"p":[-3]}`,
		`{"v":1,"s":"fc","t":1,"k":1,"n":1,"p":["x"]}`,
	} {
		if _, err := curated.DecodeContext([]byte(bad)); err == nil {
			t.Errorf("DecodeContext(%s) succeeded", bad)
		}
	}
}

func FuzzDecodeContext(f *testing.F) {
	f.Add([]byte(`{"v":1,"s":"ao","t":2,"k":40,"n":4,"p":[{"r":"system","x":"note"},0,{"r":"assistant","x":"[x]"},2]}`))
	f.Add([]byte(`{"v":1,"s":"concat","t":3,"k":9,"n":1,"p":[0,{"i":2,"j":1},{"i":4,"j":1,"f":3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := curated.DecodeContext(data)
		if err != nil {
			return
		}
		again, err := curated.EncodeContext(x)
		if err != nil {
			t.Fatal(err)
		}
		y, err := curated.DecodeContext(again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if fmt.Sprint(x) != fmt.Sprint(y) {
			t.Fatalf("round trip changed the context:\n%+v\n%+v", x, y)
		}
	})
}
