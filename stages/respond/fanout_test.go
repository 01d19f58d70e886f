package respond_test

import (
	"errors"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/stages/respond"
)

// A unit keeps the first failure of its calls and stores its output either
// way.
func TestPending(t *testing.T) {
	p := respond.Pending[respond.Output]{Turn: 3, Out: respond.Output{Strategy: "fc"}, Tokens: 7}
	u, err := p.Unit()
	if err != nil || u.Failed || u.Turn != 3 || u.Tokens != 7 || u.Attempts != 1 || string(u.Output) == "" {
		t.Fatalf("unit = %+v, %v", u, err)
	}
	p.Fail("sample 1", &llm.ParseError{Attempts: 3, Raw: "first raw", Err: errors.New("empty answer")})
	p.Fail("sample 2", errors.New("later"))
	u, err = p.Unit()
	if err != nil || !p.Failed() || !u.Failed {
		t.Fatalf("unit = %+v, %v", u, err)
	}
	if u.Error != "sample 1: parsing model answer (3 tries): empty answer" || u.Raw != "first raw" {
		t.Errorf("error %q, raw %q", u.Error, u.Raw)
	}
}
