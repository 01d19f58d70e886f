package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// How a command stops at the first Ctrl-C or SIGTERM: it takes no new work
// and gives calls in flight StopGrace to be answered and recorded (an
// answer is cached before it is used, so one that came is never paid for
// again), then abandons the rest (they stay pending and are sent again on
// resume), commits what finished and exits 3. An endpoint that hangs cannot
// hold it longer. A command still running at StopDeadline quits as kill -9
// would, which loses nothing committed: every command ends within 5 s of
// the signal.
const (
	StopGrace    = 3 * time.Second
	StopDeadline = 4500 * time.Millisecond
)

// OnSignals keeps that promise for the signals sigs delivers: at the first
// it closes stop (Options.Stop) and says so on w; at the second, or
// StopGrace later, it calls cancel, which abandons calls in flight; at the
// third, or at StopDeadline, it calls exit with ExitStopped. It returns
// when exit does (never, in a real process).
func OnSignals(sigs <-chan os.Signal, stop chan<- struct{}, cancel context.CancelFunc, w io.Writer, exit func(int)) {
	<-sigs
	deadline := time.NewTimer(StopDeadline)
	grace := time.NewTimer(StopGrace)
	fmt.Fprintf(w, "\nstopping: no new work; work in flight has %s to finish (Ctrl-C again abandons it now); the run resumes either way\n", StopGrace)
	close(stop)
	select {
	case <-sigs:
		fmt.Fprintln(w, "abandoning work in flight; committed work is kept (a third Ctrl-C quits at once)")
	case <-grace.C:
		fmt.Fprintln(w, "abandoning work still in flight; it stays pending, committed work is kept")
	}
	// The engine still records what finished; the command waits for it
	// before exiting.
	cancel()
	select {
	case <-sigs:
	case <-deadline.C:
		fmt.Fprintf(w, "ac3: still busy %s after the signal: quitting; committed work is kept, run the same command again to continue\n", StopDeadline)
	}
	exit(ExitStopped)
}

// UntilStop returns a context that also ends when stop closes (at once if
// it is closed already). The report, the exports, status and the dry run
// record nothing in the run, so they have no work in flight to finish: a
// Ctrl-C ends them at once (export files are written whole or not at all)
// instead of after minutes of a large export.
func UntilStop(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if stop == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	select {
	case <-stop:
		cancel() // closed already: ended before the caller's first call
	default:
	}
	return ctx, cancel
}
