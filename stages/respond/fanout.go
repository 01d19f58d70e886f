package respond

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/llm"
)

// The fan-out of a task's model calls, shared with the judge: every unit of
// a conversation takes several calls (samples, orders shown), all made at
// once, and each unit is stored once its calls are in.

// Reply is the outcome of one call of a fan-out: what was read from the
// answer and the response, or Err, the call's own failure.
type Reply[V any] struct {
	Value V
	Resp  llm.Response
	Err   error
}

// FanOut makes the calls 0..n-1 through t.Each, as many in flight as the
// engine's model window and the endpoint's limits allow, and returns their replies in call order. A failure that is the call's own (a
// malformed answer after retries, a rejected request: llm.UnitFailure)
// stays in its reply, for its unit to fail. Any other error (a budget
// refusal, a fatal endpoint error) keeps the remaining calls from starting
// and is returned once the calls in flight have finished and been cached;
// the task then stays pending.
func FanOut[V any](ctx context.Context, t pipeline.Task, n int, call func(ctx context.Context, k int) (V, llm.Response, error)) ([]Reply[V], error) {
	out := make([]Reply[V], n)
	err := t.Each(ctx, n, 0, func(ctx context.Context, k int) error {
		v, resp, err := call(ctx, k)
		if _, unit := llm.UnitFailure(err); err != nil && !unit {
			return err
		}
		out[k] = Reply[V]{v, resp, err}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Pending is a unit being filled by the replies of a fan-out: its stored
// output (JSON), the tokens it spent and the first of its calls that failed.
type Pending[O any] struct {
	Turn   int
	Out    O
	Tokens int64
	failed string
	raw    string
}

// Fail records the failure err of the call what names ("sample 2"). The
// unit fails with the first one and keeps that call's raw answer.
func (p *Pending[O]) Fail(what string, err error) {
	if p.failed == "" {
		p.failed = fmt.Sprintf("%s: %v", what, err)
		p.raw, _ = llm.UnitFailure(err)
	}
}

// Failed reports whether a call of p failed.
func (p *Pending[O]) Failed() bool { return p.failed != "" }

// Unit returns the stored unit: p.Out as JSON, failed with the first
// failure when a call failed. The error is the encoding's.
func (p *Pending[O]) Unit() (pipeline.Unit, error) {
	b, err := json.Marshal(p.Out)
	if err != nil {
		return pipeline.Unit{}, err
	}
	u := pipeline.Unit{Turn: p.Turn, Output: b, Tokens: p.Tokens, Attempts: 1}
	if p.failed != "" {
		u.Failed, u.Error, u.Raw = true, p.failed, p.raw
	}
	return u, nil
}
