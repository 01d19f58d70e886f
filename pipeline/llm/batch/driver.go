package batch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
)

// Fallbacks: what happens to the requests a batch did not answer (it
// expired, failed or was cancelled, or answered them with an error).
const (
	// FallbackResubmit queues them for a new batch, up to MaxSubmits
	// batches per request; a request the endpoint rejected (a 4xx other
	// than 408, 409, 429) fails its unit at once, as it would online.
	FallbackResubmit = "resubmit"
	// FallbackOnline sends them online, within the endpoint's own limits.
	FallbackOnline = "online"
)

// Limits of the OpenAI batch API, the defaults of Options.
const (
	DefaultMaxRequests = 50_000
	DefaultMaxBytes    = 200 << 20
	DefaultMaxSubmits  = 3
	DefaultPoll        = 30 * time.Second
	// DefaultFirstPoll is the first wait between polls: short, so a batch
	// the endpoint finishes in seconds is imported in seconds. Each next
	// wait doubles, up to Poll, so a slow batch is polled no more often
	// than Poll says.
	DefaultFirstPoll = 2 * time.Second
)

// ErrStopped is returned by Wait when Options.Stop closed while batches
// were still running: they stay recorded, and the next run re-attaches.
var ErrStopped = errors.New("stopped while batches were running; run again to pick them up")

// Options configure a Driver.
type Options struct {
	Client *llm.Client
	Ledger *ledger.Ledger
	// MaxRequests and MaxBytes bound one batch input file (defaults: the
	// OpenAI limits, 50,000 requests and 200 MB).
	MaxRequests int
	MaxBytes    int64
	// Poll is the longest wait between two polls of the live batches
	// (default 30s). The first wait is FirstPoll (default 2s, never more
	// than Poll) and each next one twice the one before, up to Poll.
	Poll      time.Duration
	FirstPoll time.Duration
	// Fallback is FallbackResubmit (default) or FallbackOnline.
	Fallback string
	// MaxSubmits bounds how many batches one request goes into under
	// FallbackResubmit (default 3).
	MaxSubmits int
	// Log receives one line per batch event. Nil discards them.
	Log io.Writer
	// Stop, when closed, ends Wait between polls with ErrStopped.
	Stop <-chan struct{}
	// TempDir holds input files while they upload (default os.TempDir).
	TempDir string

	// hook, when set (by tests), is called at each point named in
	// export_test.go; an error returned there is returned as if the
	// process had died at that point: nothing after it is recorded.
	hook func(point string) error
	// sleep, when set (by tests), is called instead of waiting between
	// polls, with the wait the driver would take, so tests see the
	// waits without spending them.
	sleep func(wait time.Duration)
}

// Driver submits the requests a run queued (see ledger.BatchQueue) as
// batches, polls them and imports their answers into the run's cache.
//
// Every step is recorded in the run file before the next acts on it, so a
// driver started on a run killed at any moment re-attaches to its batches:
// a batch prepared but not uploaded is uploaded (a file uploaded but not
// recorded is left unused on the endpoint, which costs nothing); a batch
// uploaded but not recorded as created is first looked for among the
// endpoint's batches by its input file; an answer is imported once, in the
// transaction that settles its request.
type Driver struct {
	o     Options
	apis  map[string]*llm.BatchAPI
	fresh map[int64]bool // batches uploaded by this driver: not yet created anywhere
	runID string
}

// New returns a driver for the run.
func New(o Options) (*Driver, error) {
	if o.Client == nil || o.Ledger == nil {
		return nil, errors.New("batch driver: needs a client and a run")
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.FirstPoll <= 0 {
		o.FirstPoll = DefaultFirstPoll
	}
	o.FirstPoll = min(o.FirstPoll, o.Poll)
	if o.MaxSubmits <= 0 {
		o.MaxSubmits = DefaultMaxSubmits
	}
	switch o.Fallback {
	case "":
		o.Fallback = FallbackResubmit
	case FallbackResubmit, FallbackOnline:
	default:
		return nil, fmt.Errorf("batch driver: unknown fallback %q (resubmit or online)", o.Fallback)
	}
	return &Driver{o: o, apis: map[string]*llm.BatchAPI{}, fresh: map[int64]bool{}}, nil
}

func (d *Driver) logf(format string, args ...any) {
	if d.o.Log != nil {
		fmt.Fprintf(d.o.Log, format, args...)
	}
}

func (d *Driver) at(point string) error {
	if d.o.hook != nil {
		return d.o.hook(point)
	}
	return nil
}

func (d *Driver) api(endpoint string) (*llm.BatchAPI, error) {
	if a, ok := d.apis[endpoint]; ok {
		return a, nil
	}
	a, err := d.o.Client.BatchAPI(endpoint)
	if err != nil {
		return nil, err
	}
	d.apis[endpoint] = a
	return a, nil
}

// Run submits what is queued, waits for every live batch and imports its
// answers: one round of the stage loop.
func (d *Driver) Run(ctx context.Context) error {
	if _, err := d.Submit(ctx); err != nil {
		return err
	}
	return d.Wait(ctx)
}

// Submit first takes the run's batches that were prepared or uploaded but
// not created to the endpoint, then puts every queued request into new
// batches, split at MaxRequests and MaxBytes. It returns how many batches
// it created.
func (d *Driver) Submit(ctx context.Context) (int, error) {
	created := 0
	live, err := d.o.Ledger.Batches(ctx, true)
	if err != nil {
		return 0, err
	}
	for _, b := range live {
		if b.State == ledger.BatchPrepared || b.State == ledger.BatchUploaded {
			if err := d.advance(ctx, b); err != nil {
				return created, err
			}
			created++
		}
	}
	eps, err := d.o.Ledger.QueuedEndpoints(ctx)
	if err != nil {
		return created, err
	}
	for _, ep := range eps {
		for {
			b, ok, err := d.o.Ledger.NewBatch(ctx, ep, d.o.MaxRequests, d.o.MaxBytes, d.o.Fallback, LineSize)
			if err != nil {
				return created, err
			}
			if !ok {
				break
			}
			if err := d.advance(ctx, b); err != nil {
				return created, err
			}
			created++
		}
	}
	return created, nil
}

// advance takes a batch from prepared or uploaded to submitted.
func (d *Driver) advance(ctx context.Context, b ledger.Batch) error {
	api, err := d.api(b.Endpoint)
	if err != nil {
		return err
	}
	if b.State == ledger.BatchPrepared {
		f, err := d.writeInput(ctx, b)
		if err != nil {
			return err
		}
		id, err := api.Upload(ctx, fmt.Sprintf("ac3-batch-%d.jsonl", b.ID), f)
		f.Close()
		os.Remove(f.Name())
		if err != nil {
			return fmt.Errorf("batch %d: %w", b.ID, err)
		}
		if err := d.at("uploaded"); err != nil {
			return err
		}
		b.InputFile, b.State = id, ledger.BatchUploaded
		if err := d.o.Ledger.UpdateBatch(ctx, b); err != nil {
			return err
		}
		d.fresh[b.ID] = true
	}
	var rb llm.RemoteBatch
	found := false
	if !d.fresh[b.ID] {
		// A run killed after creating the batch but before recording it:
		// find the batch instead of submitting the requests twice.
		rb, found, err = api.FindByInput(ctx, b.InputFile, 1000)
		if err != nil {
			return fmt.Errorf("batch %d: %w", b.ID, err)
		}
		if found {
			d.logf("batch %d: re-attached to %s (%s)\n", b.ID, rb.ID, rb.Status)
		}
	}
	if !found {
		if d.runID == "" {
			if d.runID, err = d.o.Ledger.RunID(ctx); err != nil {
				return err
			}
		}
		rb, err = api.Create(ctx, b.InputFile, map[string]string{"ac3_run": d.runID, "ac3_batch": fmt.Sprint(b.ID)})
		if err != nil {
			return fmt.Errorf("batch %d: %w", b.ID, err)
		}
		if err := d.at("created"); err != nil {
			return err
		}
		d.logf("batch %d: %d requests to %s as %s\n", b.ID, b.Requests, b.Endpoint, rb.ID)
	}
	delete(d.fresh, b.ID)
	b.RemoteID, b.State = rb.ID, ledger.BatchSubmitted
	d.observe(&b, rb)
	return d.o.Ledger.UpdateBatch(ctx, b)
}

// writeInput writes a batch's input file to a temporary file, rewound.
func (d *Driver) writeInput(ctx context.Context, b ledger.Batch) (*os.File, error) {
	f, err := os.CreateTemp(d.o.TempDir, "ac3-batch-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("batch %d: writing its input file: %w", b.ID, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	url := d.o.Client.BatchURL(b.Endpoint)
	err = d.o.Ledger.BatchLines(ctx, b.ID, func(key string, body []byte) error {
		var err error
		line, err = AppendInputLineURL(line[:0], url, key, body)
		if err != nil {
			return err
		}
		_, err = w.Write(line)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("batch %d: writing its input file: %w", b.ID, err)
	}
	return f, nil
}

// observe copies what the endpoint reports into b; a batch that is over
// becomes ended.
func (d *Driver) observe(b *ledger.Batch, rb llm.RemoteBatch) {
	b.RemoteStatus = rb.Status
	b.OutputFile, b.ErrorFile = rb.OutputFile, rb.ErrorFile
	b.Completed, b.Failed = int64(rb.Completed), int64(rb.Failed)
	b.Errors = strings.Join(rb.Errors, "; ")
	if rb.Terminal() && b.State == ledger.BatchSubmitted {
		b.State = ledger.BatchEnded
	}
}

// Wait polls the run's live batches until every one is over and imported.
// A batch found over is imported at once, before the next wait; the waits
// between polls start at FirstPoll and double up to Poll, so a round of
// batches the endpoint answers in a second takes seconds, and one it
// answers in hours is polled every Poll. Wait blocks until then, until
// Options.Stop is closed (ErrStopped: the batches stay recorded for the
// next run) or ctx ends.
func (d *Driver) Wait(ctx context.Context) error {
	wait := d.o.FirstPoll
	for {
		live, err := d.o.Ledger.Batches(ctx, true)
		if err != nil {
			return err
		}
		running := 0
		for _, b := range live {
			switch b.State {
			case ledger.BatchSubmitted:
				api, err := d.api(b.Endpoint)
				if err != nil {
					return err
				}
				rb, err := api.Get(ctx, b.RemoteID)
				if err != nil {
					return fmt.Errorf("batch %d: %w", b.ID, err)
				}
				d.observe(&b, rb)
				if err := d.o.Ledger.UpdateBatch(ctx, b); err != nil {
					return err
				}
				if err := d.at("polled"); err != nil {
					return err
				}
				if b.State != ledger.BatchEnded {
					running++
					continue
				}
				d.logf("batch %d (%s): %s, %d answered, %d failed of %d\n", b.ID, b.RemoteID, rb.Status, rb.Completed, rb.Failed, b.Requests)
				fallthrough
			case ledger.BatchEnded:
				if err := d.importBatch(ctx, b); err != nil {
					return err
				}
			default:
				// prepared or uploaded: Submit's to take on.
			}
		}
		if running == 0 {
			return nil
		}
		if err := d.pause(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, d.o.Poll)
	}
}

// pause waits between two polls. It returns ErrStopped when Options.Stop
// is closed first, ctx's error when ctx ends first.
func (d *Driver) pause(ctx context.Context, wait time.Duration) error {
	if d.o.sleep != nil {
		d.o.sleep(wait)
		select {
		case <-d.o.Stop:
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		default:
			return nil
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-d.o.Stop:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ImportStats counts what an import did with the lines it read.
type ImportStats struct {
	Imported  int64 // answers stored in the cache
	Settled   int64 // error lines and unanswered requests sent to the fallback
	Repeated  int64 // lines for requests already settled (an import run again)
	Unknown   int64 // lines whose custom_id the run never asked for, or asked of another batch
	Malformed int64 // lines that could not be read
	// fatal is the first error line that an online call would have
	// stopped the run with (a rejected key, an unknown model): the import
	// finishes, then the run stops with it.
	fatal error
}

// importBatch imports the output and error files of an ended batch, then
// settles the requests no line answered, and records it imported.
func (d *Driver) importBatch(ctx context.Context, b ledger.Batch) error {
	api, err := d.api(b.Endpoint)
	if err != nil {
		return err
	}
	var st ImportStats
	for _, fid := range []string{b.OutputFile, b.ErrorFile} {
		if fid == "" {
			continue
		}
		rc, err := api.Content(ctx, fid)
		if err != nil {
			return fmt.Errorf("batch %d: %w", b.ID, err)
		}
		err = ReadResults(rc, func(line int, r Result, perr error) error {
			if perr != nil {
				st.Malformed++
				d.logf("batch %d: file %s line %d skipped: %v\n", b.ID, fid, line, perr)
				return nil
			}
			return d.importLine(ctx, b, r, &st)
		})
		rc.Close()
		if err != nil {
			return fmt.Errorf("batch %d: importing %s: %w", b.ID, fid, err)
		}
	}
	reason := "the batch ended " + b.RemoteStatus + " without answering it"
	if b.Errors != "" {
		reason += ": " + b.Errors
	}
	err = d.o.Ledger.Unsettled(ctx, b.ID, func(r ledger.BatchRequest) error {
		state := d.fallback(0, r.Submits)
		if _, err := d.o.Ledger.SettleRequest(ctx, b.ID, r.Key, state, 0, reason); err != nil {
			return err
		}
		st.Settled++
		return nil
	})
	if err != nil {
		return err
	}
	if st.Unknown > 0 || st.Malformed > 0 {
		d.logf("batch %d: %d lines for requests this run did not ask of it and %d unreadable lines were skipped\n", b.ID, st.Unknown, st.Malformed)
	}
	if st.Settled > 0 {
		d.logf("batch %d: %d requests not answered go to the fallback (%s)\n", b.ID, st.Settled, d.o.Fallback)
	}
	b.State = ledger.BatchImported
	if err := d.o.Ledger.UpdateBatch(ctx, b); err != nil {
		return err
	}
	if st.fatal != nil {
		return fmt.Errorf("batch %d: %w", b.ID, st.fatal)
	}
	return nil
}

// importLine stores one answer, or settles one error line.
func (d *Driver) importLine(ctx context.Context, b ledger.Batch, r Result, st *ImportStats) error {
	req, ok, err := d.o.Ledger.LookupBatchRequest(ctx, r.CustomID)
	if err != nil {
		return err
	}
	if !ok || req.BatchID != b.ID {
		st.Unknown++
		return nil
	}
	if req.State != ledger.ReqSubmitted {
		st.Repeated++
		return nil
	}
	if r.OK() {
		done, err := Import(ctx, d.o.Client, d.o.Ledger, b.ID, req, r.Body)
		if err == nil {
			if done {
				st.Imported++
			} else {
				st.Repeated++
			}
			return d.at("imported")
		}
		if !errors.Is(err, ErrMalformed) {
			return err
		}
		r = Result{CustomID: r.CustomID, Status: 0, Code: "malformed_answer", Message: err.Error()}
	}
	state := d.fallback(r.Status, req.Submits)
	if fatal := d.o.Client.FatalStatus(b.Endpoint, r.Status, r.message(), string(r.Body)); fatal != nil {
		// Online, this answer stops the run and the unit stays pending:
		// so here, with the request queued again for the run after the fix.
		state = ledger.ReqQueued
		if st.fatal == nil {
			st.fatal = fatal
		}
	}
	if _, err := d.o.Ledger.SettleRequest(ctx, b.ID, r.CustomID, state, r.Status, r.Reason()); err != nil {
		return err
	}
	st.Settled++
	return nil
}

// ErrMalformed marks an answer line whose body is not a chat completion
// (or, for the embedder's endpoint, not an embeddings answer).
var ErrMalformed = errors.New("malformed answer")

// Import stores a 200 answer body for req (found in batch batchID, or 0
// for a results file imported by hand) in the run's cache at the batch
// price, exactly once. It reports false when the request was already
// settled. A body that is not a chat completion is an error wrapping
// ErrMalformed.
func Import(ctx context.Context, c *llm.Client, l *ledger.Ledger, batchID int64, req ledger.BatchRequest, body []byte) (bool, error) {
	cr, err := c.ParseAnswer(req.Endpoint, body)
	if err != nil {
		return false, fmt.Errorf("request %s: %w: %v", req.Key, ErrMalformed, err)
	}
	cost, err := c.BatchCost(req.Endpoint, cr.Usage)
	if err != nil {
		return false, err
	}
	cr.CostUSD, cr.CreatedAt = cost, time.Now().UTC()
	model := cr.Model
	if model == "" {
		if ep, ok := c.EndpointNamed(req.Endpoint); ok {
			model = ep.Model
		}
	}
	rec := llm.CallRecord{
		Time: cr.CreatedAt, Role: req.Role, Stage: req.Stage, Endpoint: req.Endpoint, Model: model, Key: req.Key,
		Usage: cr.Usage, CostUSD: cost, Attempts: 1, Status: llm.StatusOK, HTTPStatus: http.StatusOK,
	}
	return l.ImportAnswer(ctx, batchID, req.Key, cr, rec)
}

// fallback is the state a request not answered goes to: status is the
// HTTP status of its error line (0 when it has none), submits how many
// batches it has been in.
func (d *Driver) fallback(status, submits int) string {
	rejected := status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusConflict && status != http.StatusTooManyRequests
	switch {
	case d.o.Fallback == FallbackOnline:
		return ledger.ReqOnline
	case rejected:
		return ledger.ReqFailed
	case submits < d.o.MaxSubmits:
		return ledger.ReqQueued
	}
	return ledger.ReqFailed
}

// Cancel asks the endpoint to cancel every live batch of the run. Their
// answers so far are imported when they end (by Wait). It returns how many
// it cancelled.
func (d *Driver) Cancel(ctx context.Context) (int, error) {
	live, err := d.o.Ledger.Batches(ctx, true)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range live {
		if b.State != ledger.BatchSubmitted {
			continue
		}
		api, err := d.api(b.Endpoint)
		if err != nil {
			return n, err
		}
		rb, err := api.Cancel(ctx, b.RemoteID)
		if err != nil {
			return n, fmt.Errorf("batch %d: %w", b.ID, err)
		}
		d.observe(&b, rb)
		if err := d.o.Ledger.UpdateBatch(ctx, b); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
