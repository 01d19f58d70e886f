package run

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
)

// The early warning of a stage whose answers do not parse reaches the
// run's progress stream, with an example of the answer.
func TestParseFailureWarningIsPrinted(t *testing.T) {
	srv := llmtest.New(t, llmtest.Options{Default: llmtest.Reply{Content: "Sure! Here is the label: feedback"}})
	m := Model{Options: &llm.Options{Endpoints: []llm.Endpoint{{Name: "small", BaseURL: srv.URL, Model: "tiny-1b", Timeout: 5 * time.Second}}}}
	var events bytes.Buffer
	c, err := m.client(context.Background(), nil, nil, &events)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reject := func(llm.Response) (int, error) { return 0, errors.New("missing tagged section(s): answer") }
	for i := range 3 {
		req := llm.Request{Role: "annotator", Stage: "classify", Messages: []conv.Message{{Role: conv.User, Content: string(rune('a' + i))}}}
		_, _, _ = llm.CallParsed(ctx, c, req, 1, reject) // two answers each
	}
	out := events.String()
	for _, want := range []string{"warning: stage classify (role annotator, model small): 5 of its first 5 answers did not parse", "missing tagged section", `One answer began: "Sure! Here is the label: feedback"`} {
		if !strings.Contains(out, want) {
			t.Errorf("progress stream lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "warning:") != 1 {
		t.Errorf("warned more than once:\n%s", out)
	}
}
