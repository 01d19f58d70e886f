package curate_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/stages/curate"
)

func TestByName(t *testing.T) {
	for _, name := range curate.Names() {
		s, err := curate.ByName(name, curate.Options{})
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if s.Name() != name || s.Version() == "" {
			t.Errorf("ByName(%q) gave %q version %q", name, s.Name(), s.Version())
		}
	}

	_, err := curate.ByName("fcc", curate.Options{})
	if err == nil || !strings.Contains(err.Error(), "fc, ao, lt, de, concat, filler") {
		t.Errorf("unknown name should list the valid ones, got %v", err)
	}
	_, err = curate.ByName("gated-reset", curate.Options{})
	if err == nil || !strings.Contains(err.Error(), "needs a model") {
		t.Errorf("model-backed name should say it needs a model, got %v", err)
	}
	_, err = curate.ByName("ao+constraints", curate.Options{})
	if !errors.Is(err, curate.ErrNeedsConstraints) {
		t.Errorf("overlay should fail with ErrNeedsConstraints, got %v", err)
	}
}

func TestVersionFollowsOptions(t *testing.T) {
	def := mustStrategy(t, "ao")
	if def.Version() != "1" {
		t.Errorf("default ao version = %q, want 1", def.Version())
	}
	custom, _ := curate.ByName("ao", curate.Options{AO: curate.AOOptions{Placeholder: "[hidden]"}})
	other, _ := curate.ByName("ao", curate.Options{AO: curate.AOOptions{Placeholder: "[gone]"}})
	if custom.Version() == def.Version() || custom.Version() == other.Version() {
		t.Errorf("versions do not separate settings: %q %q %q", def.Version(), custom.Version(), other.Version())
	}
	ao := custom.(curate.AssistantOmission)
	if !strings.Contains(ao.Note(), `"[hidden]"`) {
		t.Errorf("default note should name the custom placeholder: %q", ao.Note())
	}
}

func TestParseList(t *testing.T) {
	cases := []struct {
		list    string
		want    []curate.Spec
		wantErr string
	}{
		{"fc,ao,lt", []curate.Spec{{Name: "fc"}, {Name: "ao"}, {Name: "lt"}}, ""},
		{" fc , ao+constraints ", []curate.Spec{{Name: "fc"}, {Name: "ao", Constraints: true}}, ""},
		{"fc,,ao", nil, "empty strategy name"},
		{"fc,fc", nil, "appears twice"},
		{"fc+nope", nil, `unknown overlay "nope"`},
		{"fc+constraints+constraints", nil, "given twice"},
		{"", nil, "empty strategy name"},
	}
	for _, tc := range cases {
		t.Run(tc.list, func(t *testing.T) {
			got, err := curate.ParseList(tc.list)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseList(%q) error = %v, want %q", tc.list, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseList(%q) = %+v, %v; want %+v", tc.list, got, err, tc.want)
			}
		})
	}

	ss, err := curate.Resolve("fc,ao,lt,de", curate.Options{})
	if err != nil || len(ss) != 4 || ss[3].Name() != "de" {
		t.Errorf("Resolve = %v, %v", ss, err)
	}
	if _, err := curate.Resolve("fc,lt+constraints", curate.Options{}); !errors.Is(err, curate.ErrNeedsConstraints) {
		t.Errorf("Resolve with an overlay: %v", err)
	}
}
