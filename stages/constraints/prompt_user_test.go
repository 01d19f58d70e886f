package constraints_test

import (
	"testing"

	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/constraints"
)

// The shipped prompt passes the declaration users' templates for it are
// checked against, so the two cannot drift apart.
func TestShippedPromptMeetsItsDeclaration(t *testing.T) {
	if err := prompt.Check(constraints.Prompt(), constraints.PromptSpec()); err != nil {
		t.Fatal(err)
	}
}
