package compint_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/stages/compint"
)

func TestDefaultSet(t *testing.T) {
	set := compint.Default()
	if len(set.SCs) != 15 {
		t.Fatalf("got %d SCs, want 15", len(set.SCs))
	}
	perType := map[string]int{}
	for i, sc := range set.SCs {
		if sc.ID != i+1 {
			t.Errorf("SC %d has id %d", i, sc.ID)
		}
		perType[sc.Type]++
		// The shipped framings are the suite's derivation; ours must agree,
		// or a user file without framings would be framed differently.
		for f, want := range compint.DeriveFramings(sc.Text) {
			if got := sc.Framing(f); got != want {
				t.Errorf("SC %d %s: shipped %q, derived %q", sc.ID, f, got, want)
			}
		}
	}
	for _, typ := range []string{"action", "information", "process", "preference", "output"} {
		if perType[typ] != 3 {
			t.Errorf("%d SCs of type %s, want 3", perType[typ], typ)
		}
	}
	if got, ok := set.Get(14); !ok || !strings.Contains(got.Text, "Let me know if you need anything else.") {
		t.Errorf("Get(14) = %+v, %v", got, ok)
	}
	if _, ok := set.Get(99); ok {
		t.Error("Get(99) found an SC")
	}
}

// The embedded copy must be the fixture the README attributes.
func TestEmbeddedSetIsTheFixture(t *testing.T) {
	fixture, err := os.ReadFile("../../fixtures/compint/sc_probes_15.json")
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := os.ReadFile("data/sc_probes_15.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fixture, embedded) {
		t.Fatal("stages/compint/data/sc_probes_15.json differs from fixtures/compint/sc_probes_15.json")
	}
	loaded, err := compint.Load("../../fixtures/compint/sc_probes_15.json")
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Hash() != compint.Default().Hash() {
		t.Error("loading the fixture gives another hash than the embedded set")
	}
}

const goodSC = `{"id": 7, "type": "Process", "sssc": "Always cite a source.", "probe": "Who wrote Hamlet?", "correct_answer": "Shakespeare, with a source.", "incorrect_answer": "Shakespeare."`

func TestParseSets(t *testing.T) {
	tests := []struct {
		name string
		json string
		want string // substring of the error; "" means it parses
	}{
		{"object without framings derives them", `{"side_constraints": [` + goodSC + `}]}`, ""},
		{"bare list", `[` + goodSC + `}]`, ""},
		{"all four framings", `[` + goodSC + `, "framings": {"plain": "p", "explicit": "e", "hard": "h", "explicit_hard": "eh"}}]`, ""},
		{"not JSON", `{"side_constraints": [`, "reading SCs from user.json"},
		{"no list", `{"scs": []}`, `no "side_constraints" list`},
		{"empty list", `{"side_constraints": []}`, "empty"},
		{"missing id", `[{"type": "Process", "sssc": "a", "probe": "b", "correct_answer": "c", "incorrect_answer": "d"}]`, "side_constraints[0]: id: missing"},
		{"string id", `[{"id": "7", "type": "Process"}]`, "side_constraints[0]: decoding"},
		{"zero id", `[` + strings.Replace(goodSC, `"id": 7`, `"id": 0`, 1) + `}]`, "id: 0 is not a positive integer"},
		{"duplicate id", `[` + goodSC + `}, ` + goodSC + `}]`, "side_constraints[1] (id 7): id: also used by side_constraints[0]"},
		{"unknown type", `[` + strings.Replace(goodSC, "Process", "Style", 1) + `}]`, `(id 7): type: "Style" is not one of`},
		{"type in any case", `[` + strings.Replace(goodSC, "Process", "PROCESS", 1) + `}]`, ""},
		{"empty probe", `[` + strings.Replace(goodSC, `"Who wrote Hamlet?"`, `"  "`, 1) + `}]`, "(id 7): probe: missing or empty"},
		{"same answers", `[` + strings.Replace(goodSC, `"Shakespeare."`, `"Shakespeare, with a source."`, 1) + `}]`, "incorrect_answer: the same as correct_answer"},
		{"misspelt key", `[` + goodSC + `, "corect": "x"}]`, `unknown field "corect"`},
		{"missing framing", `[` + goodSC + `, "framings": {"plain": "p", "explicit": "e", "hard": "h"}}]`, "(id 7): framings.explicit_hard: missing"},
		{"unknown framing", `[` + goodSC + `, "framings": {"plain": "p", "explicit": "e", "hard": "h", "explicit_hard": "eh", "soft": "s"}}]`, "framings.soft: unknown framing"},
		{"empty framing", `[` + goodSC + `, "framings": {"plain": "", "explicit": "e", "hard": "h", "explicit_hard": "eh"}}]`, "framings.plain: missing or empty"},
		{"second SC bad", `[` + goodSC + `}, {"id": 8, "type": "Output"}]`, "side_constraints[1] (id 8): sssc: missing or empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, err := compint.Parse("user.json", []byte(tc.json))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if set.Name != "user.json" || len(set.SCs) == 0 || set.Hash() == "" {
					t.Errorf("set = %+v", set)
				}
				for _, f := range compint.Framings() {
					if set.SCs[0].Framing(f) == "" {
						t.Errorf("framing %s empty", f)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("parsed; want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "user.json") {
				t.Errorf("error %q does not name the file and contain %q", err, tc.want)
			}
		})
	}
}

func TestSCErrorFields(t *testing.T) {
	_, err := compint.Parse("mine.json", []byte(`[`+goodSC+`}, {"id": 9, "type": "Output", "sssc": "x", "probe": "", "correct_answer": "c", "incorrect_answer": "d"}]`))
	var se *compint.SCError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *SCError", err)
	}
	if se.File != "mine.json" || se.Index != 1 || se.ID != 9 || se.Field != "probe" {
		t.Errorf("SCError = %+v", se)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := compint.Load(filepath.Join(t.TempDir(), "absent.json")); err == nil || !strings.Contains(err.Error(), "reading SCs") {
		t.Errorf("err = %v", err)
	}
}

func TestSCHashChangesWithContent(t *testing.T) {
	a, err := compint.Parse("a", []byte(`[`+goodSC+`}]`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := compint.Parse("b", []byte(`[`+strings.Replace(goodSC, "cite a source", "cite two sources", 1)+`}]`))
	if err != nil {
		t.Fatal(err)
	}
	if a.SCs[0].Hash() == b.SCs[0].Hash() || a.Hash() == b.Hash() {
		t.Error("editing an SC's text left its hash unchanged")
	}
	again, _ := compint.Parse("c", []byte(`[`+goodSC+`}]`))
	if again.Hash() != a.Hash() {
		t.Error("the same SCs hash differently")
	}
}

func TestDeriveFramings(t *testing.T) {
	got := compint.DeriveFramings("Reply in bullet points only.")
	want := map[compint.Framing]string{
		compint.Plain:        "Reply in bullet points only.",
		compint.Explicit:     "For the rest of this session. reply in bullet points only.",
		compint.Hard:         "This is an important constraint: reply in bullet points only.",
		compint.ExplicitHard: "This is an important constraint: for the rest of this session. reply in bullet points only.",
	}
	for f, w := range want {
		if got[f] != w {
			t.Errorf("%s: got %q, want %q", f, got[f], w)
		}
	}
}

func FuzzParseSCs(f *testing.F) {
	f.Add([]byte(`[` + goodSC + `}]`))
	f.Add([]byte(`{"side_constraints": [` + goodSC + `, "framings": {"plain": "p", "explicit": "e", "hard": "h", "explicit_hard": "eh"}}]}`))
	f.Add([]byte(`{"side_constraints": null}`))
	f.Add([]byte(`[{"id": 1e99}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := compint.Parse("fuzz.json", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		ids := map[int]bool{}
		for _, sc := range set.SCs {
			if sc.ID < 1 || ids[sc.ID] || sc.Text == "" || sc.Probe == "" || sc.Correct == sc.Incorrect {
				t.Fatalf("accepted a bad SC %+v", sc)
			}
			ids[sc.ID] = true
			for _, fr := range compint.Framings() {
				if sc.Framing(fr) == "" {
					t.Fatalf("SC %d has no %s framing", sc.ID, fr)
				}
			}
		}
	})
}
