// Command ac3 processes large logs of multi-turn human–AI conversations in
// resumable batch runs: ingest and filter, annotate, curate contexts,
// respond, judge, report and export. Run `ac3 --help` for the manual.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ac3/ac3/pipeline/memgov"
	"github.com/ac3/ac3/run"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go run.OnSignals(sigs, stop, cancel, os.Stderr, os.Exit)
	app := newApp(&env{stop: stop, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, setMemoryLimit: setSoftLimit, governInterval: memgov.Interval})
	err := app.RunContext(ctx, os.Args)
	if run.Printed(err) {
		fmt.Fprintln(os.Stderr, "ac3:", run.ErrorLine(err))
	}
	os.Exit(run.ExitCode(err))
}
