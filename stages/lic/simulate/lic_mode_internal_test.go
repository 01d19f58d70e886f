package simulate

import (
	"strings"
	"testing"
)

func TestParseLiCUser(t *testing.T) {
	given := []bool{true, false, true, false} // pieces 1 and 3 given
	for _, tc := range []struct {
		text, want string // want: "" for a good answer, else a part of the error
		piece      int
	}{
		{`{"message": "it's 12 apples", "piece": 2}`, "", 2},
		{"```json\n{\"message\": \"no idea\", \"piece\": 0}\n```", "", 0},
		{`{"message": "again", "piece": 3}`, "given already", 0},
		{`{"message": "far", "piece": 5}`, "pieces 1 to 4", 0},
		{`{"message": "neg", "piece": -1}`, "pieces 1 to 4", 0},
		{`{"message": "  ", "piece": 2}`, `no "message"`, 0},
		{`{"message": "no piece"}`, `no "piece"`, 0},
		{`not json`, "", -1},
	} {
		a, err := parseLiCUser(tc.text, given)
		switch {
		case tc.piece < 0:
			if err == nil {
				t.Errorf("%q: accepted", tc.text)
			}
		case tc.want != "":
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: error %v, want one containing %q", tc.text, err, tc.want)
			}
		case err != nil || *a.Piece != tc.piece:
			t.Errorf("%q: %+v, %v; want piece %d", tc.text, a, err, tc.piece)
		}
	}
}

// FuzzParseLiCUser: whatever the simulator writes, the parser returns an
// error or a non-empty message and a piece that may be given now.
func FuzzParseLiCUser(f *testing.F) {
	for _, s := range []string{`{"message": "x", "piece": 2}`, `{"message": "x", "piece": 0}`, `{"piece": 9}`, "```json\n{}\n```", `[]`} {
		f.Add(s)
	}
	given := []bool{true, false, false}
	f.Fuzz(func(t *testing.T, text string) {
		a, err := parseLiCUser(text, given)
		if err != nil {
			return
		}
		if a.Message == "" || a.Piece == nil || *a.Piece < 0 || *a.Piece > len(given) || (*a.Piece > 0 && given[*a.Piece-1]) {
			t.Fatalf("accepted %q as %+v", text, a)
		}
	})
}
