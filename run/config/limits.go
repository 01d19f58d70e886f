package config

import (
	"fmt"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
)

// limitsConfig is an endpoint's (or a model's) limits:
//
//	limits:
//	  concurrency: 16        # requests in flight (llm default 8)
//	  min_concurrency: 4     # floor of the adaptive limit (default concurrency/4)
//	  rpm: 600               # requests per minute
//	  tpm: 2000000           # tokens per minute
//	  patience: 30m          # how long one request waits out 429s (default 30m)
//	  unreachable: 60s       # how long the endpoint may be unreachable before the run stops (default 60s)
type limitsConfig struct {
	Concurrency    int    `yaml:"concurrency"`
	MinConcurrency int    `yaml:"min_concurrency"`
	RPM            int    `yaml:"rpm"`
	TPM            int    `yaml:"tpm"`
	Patience       string `yaml:"patience"`
	Unreachable    string `yaml:"unreachable"`
}

// check validates the limits; path is the key they sit under, for errors.
func (l limitsConfig) check(path string) error {
	for _, f := range []struct {
		key string
		v   int
	}{{"concurrency", l.Concurrency}, {"min_concurrency", l.MinConcurrency}, {"rpm", l.RPM}, {"tpm", l.TPM}} {
		if f.v < 0 {
			return fmt.Errorf("%s.%s: %d, want a positive number (or leave it out for the default)", path, f.key, f.v)
		}
	}
	switch {
	case l.MinConcurrency > 0 && l.Concurrency == 0:
		return fmt.Errorf("%s.min_concurrency: set concurrency beside it; the adaptive limit moves between the two", path)
	case l.MinConcurrency > l.Concurrency:
		return fmt.Errorf("%s.min_concurrency: %d is above concurrency %d; the adaptive limit moves between the two", path, l.MinConcurrency, l.Concurrency)
	}
	for _, f := range []struct{ key, v, example string }{{"patience", l.Patience, "30m"}, {"unreachable", l.Unreachable, "60s"}} {
		if f.v == "" {
			continue
		}
		d, err := time.ParseDuration(f.v)
		if err != nil {
			return fmt.Errorf("%s.%s: %q is not a duration (e.g. %s, 2h): %w", path, f.key, f.v, f.example, err)
		}
		if d <= 0 {
			return fmt.Errorf("%s.%s: %s, want a positive duration (e.g. %s)", path, f.key, f.v, f.example)
		}
	}
	return nil
}

// llm is the limits as the llm client takes them. Call it on checked
// limits only.
func (l limitsConfig) llm() llm.Limits {
	out := llm.Limits{Concurrency: l.Concurrency, MinConcurrency: l.MinConcurrency, RPM: l.RPM, TPM: l.TPM}
	out.Patience, _ = time.ParseDuration(l.Patience) // checked at load; 0 is the default
	out.Unreachable, _ = time.ParseDuration(l.Unreachable)
	return out
}

// checkRun validates run.workers and refuses run.window.
func (c *File) checkRun() error {
	if c.Run.Workers < 0 {
		return fmt.Errorf("run.workers: %d, want a positive number of CPU workers (or leave it out: one per core)", c.Run.Workers)
	}
	if c.Run.Window != nil {
		return gone("run.window")
	}
	return nil
}

// gone is the error for a setting of how many model calls run at once that
// ac3 no longer has: one knob paces model calls, the endpoint's limits.
func gone(path string) error {
	return fmt.Errorf("%s: this setting is gone; model calls are paced by each endpoint's limits (endpoints.NAME.limits.concurrency, rpm, tpm), and a model stage keeps twice the concurrency of tasks open", path)
}
