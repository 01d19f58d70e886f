package config

import (
	"fmt"
	"sort"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/parse"
)

// How stages ask each model for their answers.
//
//	endpoints:
//	  local:
//	    base_url: http://127.0.0.1:8000/v1
//	    kind: vllm            # openai | azure | vllm | llamacpp | ollama | openrouter | other
//	    output: json_schema   # tags | json_schema; default from kind
//	models:
//	  small: {endpoint: local, output: tags}   # a model's own setting wins
//
// output: tags asks for nonce-tagged sections in free text and works with
// any server. output: json_schema sends each stage's strict JSON schema in
// response_format, which the server enforces while decoding, and reads the
// answer as one JSON object. When neither the model nor its endpoint sets
// output, the endpoint's kind decides: json_schema for openai, azure, vllm,
// llamacpp and ollama; tags for openrouter (enforcement depends on the
// provider a request is routed to), for other, and when no kind is given.
// So a config written before these keys existed keeps asking for tags.
// The output is part of each stage's version: changing it makes new units.
//
// OutputHelp is that rule in one line, for --help and `ac3 config` output.
const OutputHelp = "output per model: tags | json_schema (endpoints.<name>.output or models.<name>.output); " +
	"default json_schema for endpoint kind openai, azure, vllm, llamacpp, ollama, tags for openrouter, other or no kind"

// checkOutputs checks every endpoint's kind and output and every model's
// output; errors name the key.
func (c *File) checkOutputs() error {
	names := make([]string, 0, len(c.Endpoints))
	for n := range c.Endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ep := c.Endpoints[name]
		if err := llm.CheckKind(ep.Kind); err != nil {
			return fmt.Errorf("endpoints.%s.kind: %w", name, err)
		}
		if _, err := parse.ParseOutput(ep.Output); err != nil {
			return fmt.Errorf("endpoints.%s.output: %w", name, err)
		}
	}
	names = names[:0]
	for n := range c.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := parse.ParseOutput(c.Models[name].Output); err != nil {
			return fmt.Errorf("models.%s.output: %w", name, err)
		}
	}
	return nil
}

// modelOutput is the output a model uses: its own, else its endpoint's,
// else "" (the llm client then takes the default of the endpoint's kind).
func modelOutput(ec endpointConfig, mc modelConfig) parse.Output {
	switch {
	case mc.Output != "":
		return parse.Output(mc.Output)
	case ec.Output != "":
		return parse.Output(ec.Output)
	}
	return ""
}
