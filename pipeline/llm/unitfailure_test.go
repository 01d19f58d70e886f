package llm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ac3/ac3/pipeline/llm"
)

func TestUnitFailure(t *testing.T) {
	tests := []struct {
		name string
		err  error
		raw  string
		ok   bool
	}{
		{"malformed answer after retries", fmt.Errorf("turn 3: %w", &llm.ParseError{Attempts: 3, Raw: "not json", Err: errors.New("no JSON")}), "not json", true},
		{"rejected request", &llm.CallError{Endpoint: "e", Status: 400, Message: "too long", Raw: `{"error":"too long"}`}, `{"error":"too long"}`, true},
		{"bad key stops the run", &llm.FatalError{Endpoint: "e", Status: 401}, "", false},
		{"budget stops the run", fmt.Errorf("judging: %w", llm.ErrBudgetExceeded), "", false},
		{"cancelled", context.Canceled, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, ok := llm.UnitFailure(tt.err)
			if raw != tt.raw || ok != tt.ok {
				t.Errorf("UnitFailure = %q, %v; want %q, %v", raw, ok, tt.raw, tt.ok)
			}
		})
	}
}
