package report

import (
	"fmt"
	"strconv"
)

// cachedNote follows the spend table: what its cached column counts.
const cachedNote = "Cache hits are answers the run's own cache gave back without a call. Endpoint-cached tokens are the prompt tokens of the calls sent that the endpoint's prompt cache served (percent of the prompt tokens sent), billed at the model's cached price."

// cachedCell is a role's endpoint-cached tokens and their share of the
// prompt tokens it sent, e.g. "43392 (62%)".
func (c RoleCost) cachedCell() string {
	if c.SentPromptTokens <= 0 {
		return strconv.FormatInt(c.EndpointCachedTokens, 10)
	}
	return fmt.Sprintf("%d (%.0f%%)", c.EndpointCachedTokens, 100*float64(c.EndpointCachedTokens)/float64(c.SentPromptTokens))
}
