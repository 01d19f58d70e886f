package curate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate"
)

func TestHuangAOUsesThePapersStringsAndItsOwnVersion(t *testing.T) {
	huang := strategy(t, "ao", curate.Options{AO: curate.HuangAO()})
	def := mustStrategy(t, "ao")
	if huang.Version() == def.Version() || !strings.HasPrefix(huang.Version(), "1+") {
		t.Errorf("Huang ao version %q, default %q: the unit key must change with the strings", huang.Version(), def.Version())
	}
	if again := strategy(t, "ao", curate.Options{AO: curate.HuangAO()}); again.Version() != huang.Version() {
		t.Errorf("the same strings gave versions %q and %q", huang.Version(), again.Version())
	}
	// Changing only the note changes the version too.
	noteOnly := strategy(t, "ao", curate.Options{AO: curate.AOOptions{Placeholder: curate.HuangPlaceholder, Note: "Placeholders mark answered turns."}})
	if noteOnly.Version() == huang.Version() {
		t.Error("a different note kept the version")
	}
	if !strings.Contains(curate.HuangNote, "'"+curate.HuangPlaceholder+"'") {
		t.Errorf("HuangNote does not quote HuangPlaceholder: %q", curate.HuangNote)
	}

	c := sevenTurns()
	xs := curateAll(t, huang, c, 3)
	m := xs[0].Materialize(c)
	want := []conv.Message{
		{Role: conv.System, Content: "Be brief.\n\n" + curate.HuangNote},
		{Role: conv.User, Content: "user message 1"},
		{Role: conv.Assistant, Content: "[Response provided]"},
		{Role: conv.User, Content: "user message 2"},
		{Role: conv.Assistant, Content: "[Response provided]"},
		{Role: conv.User, Content: "user message 3"},
	}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("Huang ao at turn 3:\n got %q\nwant %q", m, want)
	}
	for _, x := range curateAll(t, huang, c, 2) {
		checkContext(t, c, x)
	}
	golden(t, "ao_huang_turn3", formatMessages(m))

	// Adaptive's ao takes the same strings.
	fu := fakeUnits{}
	for turn := 2; turn <= 7; turn++ {
		fu[curate.ClassifyStage] = append(fu[curate.ClassifyStage], unit(c.ID, turn, "llm", map[string]any{"type": "new_ask", "refs": []string{}}))
	}
	ad := curateAll(t, strategy(t, "adaptive", curate.Options{Units: fu, AO: curate.HuangAO()}), c, 3)
	if got := ad[0].Materialize(c); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("adaptive choosing ao ignores the AO options:\n%q", got)
	}
}

func TestBlankAOStringsAreRefused(t *testing.T) {
	for _, o := range []curate.AOOptions{{Placeholder: "  "}, {Note: "\n\t"}} {
		for _, name := range []string{"ao", "adaptive"} {
			if _, err := curate.ByName(name, curate.Options{AO: o}); err == nil || !strings.Contains(err.Error(), "blank") {
				t.Errorf("%s with %+v: error %v, want a blank-string error", name, o, err)
			}
		}
	}
	if _, err := curate.ByName("fc", curate.Options{AO: curate.AOOptions{Placeholder: " "}}); err != nil {
		t.Errorf("fc does not use the AO options but failed: %v", err)
	}
}
