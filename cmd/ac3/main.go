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
	"time"

	"github.com/ac3/ac3/pipeline/memgov"
)

// How a command stops at the first Ctrl-C or SIGTERM: it takes no new work
// and gives calls in flight stopGrace to be answered and recorded (an
// answer is cached before it is used, so one that came is never paid for
// again), then abandons the rest (they stay pending and are sent again on
// resume), commits what finished and exits 3. An endpoint that hangs cannot
// hold it longer. A command still running at stopDeadline quits as kill -9
// would, which loses nothing committed: every command ends within 5 s of
// the signal.
const (
	stopGrace    = 3 * time.Second
	stopDeadline = 4500 * time.Millisecond
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		deadline := time.NewTimer(stopDeadline)
		grace := time.NewTimer(stopGrace)
		fmt.Fprintf(os.Stderr, "\nstopping: no new work; work in flight has %s to finish (Ctrl-C again abandons it now); the run resumes either way\n", stopGrace)
		close(stop)
		select {
		case <-sigs:
			fmt.Fprintln(os.Stderr, "abandoning work in flight; committed work is kept (a third Ctrl-C quits at once)")
		case <-grace.C:
			fmt.Fprintln(os.Stderr, "abandoning work still in flight; it stays pending, committed work is kept")
		}
		// Cancelling abandons calls in flight; the engine still records
		// what finished, and main waits for it before exiting.
		cancel()
		select {
		case <-sigs:
		case <-deadline.C:
			fmt.Fprintf(os.Stderr, "ac3: still busy %s after the signal: quitting; committed work is kept, run the same command again to continue\n", stopDeadline)
		}
		os.Exit(exitStopped)
	}()
	app := newApp(&env{stop: stop, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, setMemoryLimit: setSoftLimit, governInterval: memgov.Interval})
	err := app.RunContext(ctx, os.Args)
	var es *exitStatus
	if err != nil && (!errors.As(err, &es) || es.err != nil) {
		fmt.Fprintln(os.Stderr, "ac3:", errorLine(err))
	}
	os.Exit(exitCode(err))
}
