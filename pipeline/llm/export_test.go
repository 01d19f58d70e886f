package llm

// SetFollowHook makes c call f each time a call starts waiting for an
// identical call in flight, so tests can order events without sleeping.
func SetFollowHook(c *Client, f func(key string)) { c.onFollow = f }
