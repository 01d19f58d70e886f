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
type limitsConfig struct {
	Concurrency    int    `yaml:"concurrency"`
	MinConcurrency int    `yaml:"min_concurrency"`
	RPM            int    `yaml:"rpm"`
	TPM            int    `yaml:"tpm"`
	Patience       string `yaml:"patience"`
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
	if l.Patience != "" {
		d, err := time.ParseDuration(l.Patience)
		if err != nil {
			return fmt.Errorf("%s.patience: %q is not a duration (e.g. 30m, 2h): %w", path, l.Patience, err)
		}
		if d <= 0 {
			return fmt.Errorf("%s.patience: %s, want a positive duration (e.g. 30m)", path, l.Patience)
		}
	}
	return nil
}

// llm is the limits as the llm client takes them. Call it on checked
// limits only.
func (l limitsConfig) llm() llm.Limits {
	out := llm.Limits{Concurrency: l.Concurrency, MinConcurrency: l.MinConcurrency, RPM: l.RPM, TPM: l.TPM}
	out.Patience, _ = time.ParseDuration(l.Patience) // checked at load; 0 is the default
	return out
}

// checkRun validates run.workers and run.window.
func (c *File) checkRun() error {
	if c.Run.Workers < 0 {
		return fmt.Errorf("run.workers: %d, want a positive number of CPU workers (or leave it out: one per core)", c.Run.Workers)
	}
	if c.Run.Window < 0 {
		return fmt.Errorf("run.window: %d, want a positive number of tasks model stages keep open (or leave it out: derived from the endpoints' limits)", c.Run.Window)
	}
	return nil
}
