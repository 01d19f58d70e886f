package report

import "testing"

// The links follow the view's URL scheme (run/view): escaped values, keys
// in the order given, empty ones left out, winners as the side of the pair.
func TestViewLinks(t *testing.T) {
	v := newViewLinks("http://127.0.0.1:9090/")
	for _, tc := range []struct{ got, want string }{
		{v.run(), "http://127.0.0.1:9090/"},
		{v.verdicts("gated-reset:fc/user_only", "quality"), "http://127.0.0.1:9090/verdicts?pair=gated-reset%3Afc%2Fuser_only&dim=quality"},
		{v.verdicts("fc:ao", "on_topic", "type", "", "turn", "3"), "http://127.0.0.1:9090/verdicts?pair=fc%3Aao&dim=on_topic&turn=3"},
		{v.onlyArm("fc:ao", "fc", "gated-reset:ao", "quality"), "http://127.0.0.1:9090/verdicts?pair=fc%3Aao&dim=quality&winner=a&vs=gated-reset%3Aao"},
		{v.onlyArm("ao:gated-reset/user_only", "gated-reset", "ao:fc/user_only", "quality"), "http://127.0.0.1:9090/verdicts?pair=ao%3Agated-reset%2Fuser_only&dim=quality&winner=b&vs=ao%3Afc%2Fuser_only"},
		{v.turn("conv a/1", 2, "verdicts"), "http://127.0.0.1:9090/conversation/conv%20a%2F1?turn=2#verdicts-2"},
		{v.conversations("pollution", "推理 & carryover"), "http://127.0.0.1:9090/conversations?pollution=%E6%8E%A8%E7%90%86+%26+carryover"},
		{viewLinks{}.run(), DefaultViewBase + "/"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
}
