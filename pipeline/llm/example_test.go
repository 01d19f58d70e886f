package llm_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// exampleTB lets an example start a test server; the example closes it.
type exampleTB struct{}

func (exampleTB) Helper()        {}
func (exampleTB) Cleanup(func()) {}

func ExampleCallParsed() {
	srv := llmtest.New(exampleTB{}, llmtest.Options{
		Default: llmtest.Reply{Content: "<think>it asks for something new</think>\n{\"type\": \"new_ask\"}"},
	})
	defer srv.Close()

	client, err := llm.New(llm.Options{
		Endpoints: []llm.Endpoint{{
			Name: "local", BaseURL: srv.URL, Model: "test-model",
			Limits: llm.Limits{Concurrency: 4, RPM: 600},
			Price:  llm.Price{Input: 0.15, Output: 0.60},
		}},
		Roles: map[string]llm.RoleBinding{"annotator": {Endpoint: "local"}},
		Cache: llm.NewMemCache(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	type label struct {
		Type string `json:"type" parse:"required,enum=new_ask|feedback|no_feedback"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := llm.Request{
		Role:  "annotator",
		Stage: "classify",
		Messages: []conv.Message{
			{Role: conv.System, Content: `Answer with {"type": ...}.`},
			{Role: conv.User, Content: "Now write me a haiku about rain."},
		},
		JSON:   true,
		Schema: &llm.Schema{Name: "label", Schema: parse.Schema(label{})},
	}
	v, resp, err := llm.CallParsed(ctx, client, req, 2, llm.JSONParser[label]())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(v.Type, "|", resp.Reasoning)
	// Output: new_ask | it asks for something new
}
