package pollution_test

import (
	"testing"

	"github.com/ac3/ac3/pipeline/prompt"
	"github.com/ac3/ac3/stages/pollution"
)

// The shipped prompt passes the declaration users' templates for it are
// checked against, so the two cannot drift apart.
func TestShippedPromptMeetsItsDeclaration(t *testing.T) {
	if err := prompt.Check(pollution.Prompt(), pollution.PromptSpec()); err != nil {
		t.Fatal(err)
	}
}
