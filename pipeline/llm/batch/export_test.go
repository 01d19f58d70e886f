package batch

import "time"

// SetHook makes the driver built from o call f at each of its stop points:
// "uploaded" (a file uploaded, not yet recorded), "created" (a batch
// created, not yet recorded), "polled" (a poll recorded), "imported" (one
// answer imported). An error from f is returned as if the process died
// there.
func SetHook(o *Options, f func(point string) error) { o.hook = f }

// SetSleep makes the driver built from o call f with each wait between
// polls instead of waiting.
func SetSleep(o *Options, f func(wait time.Duration)) { o.sleep = f }
