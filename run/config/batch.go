package config

import (
	"fmt"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/run"
)

// batchConfig is the batch: section: how batch mode (endpoints.X.mode or
// roles.X.mode: batch, or --batch) makes its batches.
//
//	batch:
//	  fallback: resubmit   # or online: what happens to requests a batch did not answer
//	  max_requests: 50000  # per input file
//	  max_mb: 200          # per input file
//	  max_submits: 3       # batches one request may go into (resubmit)
//	  poll: 30s            # wait between polls
//	  files: false         # true: queue requests for ac3 batch export / import, never submit
type batchConfig struct {
	Fallback    string `yaml:"fallback"`
	MaxRequests int    `yaml:"max_requests"`
	MaxMB       int    `yaml:"max_mb"`
	MaxSubmits  int    `yaml:"max_submits"`
	Poll        string `yaml:"poll"`
	Files       bool   `yaml:"files"`
}

func (c *File) validateBatch() error {
	b := c.Batch
	switch b.Fallback {
	case "", "resubmit", "online":
	default:
		return fmt.Errorf("batch.fallback: %q is not one of resubmit, online", b.Fallback)
	}
	if b.Poll != "" {
		if d, err := time.ParseDuration(b.Poll); err != nil || d <= 0 {
			return fmt.Errorf("batch.poll: %q is not a positive duration", b.Poll)
		}
	}
	if b.MaxRequests < 0 || b.MaxMB < 0 || b.MaxSubmits < 0 {
		return fmt.Errorf("batch: max_requests, max_mb and max_submits must not be negative")
	}
	for name, ep := range c.Endpoints {
		if !validMode(ep.Mode) {
			return fmt.Errorf("endpoints.%s.mode: %q is not one of online, batch", name, ep.Mode)
		}
	}
	for name, r := range c.Roles {
		if !validMode(r.Mode) {
			return fmt.Errorf("roles.%s.mode: %q is not one of online, batch", name, r.Mode)
		}
	}
	for name, m := range c.Models {
		if m.Price.Batch < 0 || m.Price.Batch > 1 {
			return fmt.Errorf("models.%s.price.batch: %g is not a share between 0 and 1", name, m.Price.Batch)
		}
	}
	return nil
}

func validMode(s string) bool { return s == "" || s == "online" || s == "batch" }

func mode(s string) llm.Mode {
	if s == "batch" {
		return llm.ModeBatch
	}
	return llm.ModeOnline
}

func (b batchConfig) settings() *run.Batch {
	poll, _ := time.ParseDuration(b.Poll) // validated at load
	return &run.Batch{
		Files: b.Files, Fallback: b.Fallback, MaxRequests: b.MaxRequests,
		MaxBytes: int64(b.MaxMB) << 20, MaxSubmits: b.MaxSubmits, Poll: poll,
	}
}

// WithBatch applies --batch (every role in batch mode) to m.
func WithBatch(m run.Model, all bool) run.Model {
	if !all {
		return m
	}
	b := run.Batch{}
	if m.Batch != nil {
		b = *m.Batch
	}
	b.All = true
	m.Batch = &b
	return m
}
