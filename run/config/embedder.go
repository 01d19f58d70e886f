package config

import (
	"fmt"
	"slices"

	"github.com/ac3/ac3/pipeline/llm"
)

// checkEmbedder checks role name's embedder settings: inputs is the
// embedder's alone and not negative, the embedder's model serves no chat
// role (an embedding model answers /v1/embeddings only), and sampling keys
// that an embeddings request cannot carry are refused rather than ignored.
func checkEmbedder(name string, r roleConfig, roles map[string]roleConfig) error {
	if name != llm.EmbedderRole {
		if r.Inputs != 0 {
			return fmt.Errorf("roles.%s.inputs: only the %s role sends several texts a request", name, llm.EmbedderRole)
		}
		return nil
	}
	switch {
	case r.Inputs < 0:
		return fmt.Errorf("roles.%s.inputs: %d, want 1 or more texts a request (0: %d)", name, r.Inputs, llm.DefaultEmbedInputs)
	case r.Temperature != nil || r.TopP != nil || r.MaxTokens != nil || r.Seed != nil || len(r.Stop) > 0 || r.ReasoningEffort != "" || r.Samples != 0:
		return fmt.Errorf("roles.%s: an embeddings request takes no sampling settings (temperature, top_p, max_tokens, seed, stop, reasoning_effort, samples); put fields such as dimensions under extra", name)
	}
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if n != name && roles[n].Model == r.Model {
			return fmt.Errorf("roles.%s.model: %s also serves the %s role; an embedding model answers /v1/embeddings, not chat requests: give the embedder its own entry under models", n, r.Model, name)
		}
	}
	return nil
}
