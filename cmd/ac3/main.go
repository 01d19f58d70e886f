// Command ac3 processes large logs of multi-turn human–AI conversations in
// resumable batch runs: ingest and filter, annotate, curate contexts,
// respond, judge, report and export. Run `ac3 --help` for the manual.
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
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\nstopping: finishing work in flight (press Ctrl-C again to abandon it; the run resumes either way)")
		close(stop)
		<-sigs
		// Cancelling abandons calls in flight; the engine still records
		// what finished, and main waits for it before exiting.
		fmt.Fprintln(os.Stderr, "abandoning work in flight; committed work is kept (a third Ctrl-C quits at once)")
		cancel()
		<-sigs
		os.Exit(exitStopped)
	}()
	app := newApp(&env{stop: stop, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, setMemoryLimit: setSoftLimit, governInterval: governInterval})
	err := app.RunContext(ctx, os.Args)
	var es *exitStatus
	if err != nil && (!errors.As(err, &es) || es.err != nil) {
		fmt.Fprintln(os.Stderr, "ac3:", errorLine(err))
	}
	os.Exit(exitCode(err))
}
