// Command ac3 processes large logs of multi-turn human–AI conversations in
// resumable batch runs: ingest and filter, curate contexts, and export. Run
// `ac3 --help` for the manual.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\nstopping: finishing work in flight (press Ctrl-C again to quit at once; the run resumes either way)")
		close(stop)
		<-sigs
		fmt.Fprintln(os.Stderr, "quitting; committed work is kept")
		cancel()
		os.Exit(130)
	}()
	app := newApp(&env{stop: stop, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	if err := app.RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "ac3:", err)
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(int(ee))
		}
		os.Exit(1)
	}
}
