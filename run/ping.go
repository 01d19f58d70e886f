package run

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/ac3/ac3/pipeline/llm"
)

// Ping sends one tiny request for role through m's client and prints, as
// 'ac3 llm ping' shows it, what came back (llm.PingResult.WriteText), the
// form the endpoint's answers take and where its key comes from.
func Ping(ctx context.Context, w io.Writer, m Model, role string) error {
	client, err := m.Client()
	if err != nil {
		return err
	}
	ep, epErr := client.Endpoint(role)
	if epErr == nil {
		// Said before the request, as a run says it: the ping would
		// otherwise be refused as a fatal call (exit 3).
		if err := ep.CheckKey(); err != nil {
			return err
		}
	}
	res, err := client.Ping(ctx, role)
	if err != nil {
		return fmt.Errorf("pinging role %s: %w", role, err)
	}
	res.WriteText(w, role)
	if epErr == nil {
		fmt.Fprintf(w, "output:   %s (endpoint kind: %s)\n", ep.Output, cmp.Or(ep.Kind, "none given"))
		fmt.Fprintf(w, "key:      %s\n", keySource(ep))
	}
	return nil
}

// keySource says where the key sent to an endpoint comes from, never the key.
func keySource(ep llm.Endpoint) string {
	switch {
	case ep.APIKeyEnv != "":
		return "from " + ep.APIKeyEnv
	case ep.APIKey != "":
		return "set"
	}
	return "none sent (the endpoint names no key variable)"
}
