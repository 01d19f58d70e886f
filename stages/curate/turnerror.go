package curate

import "fmt"

// TurnError reports that one turn could not be curated: a model answer that
// stayed malformed after its retries, a request the endpoint rejected, or a
// missing upstream unit. Contexts returns it with the contexts of the turns
// before it; the stage records those as done and this turn as failed, and
// stops the conversation there, since later turns of a stateful strategy
// depend on this one. `ac3 retry` re-queues it.
type TurnError struct {
	Turn int
	Raw  string // the model's last raw answer, when there was one
	Err  error
}

func (e *TurnError) Error() string { return fmt.Sprintf("turn %d: %v", e.Turn, e.Err) }

func (e *TurnError) Unwrap() error { return e.Err }
