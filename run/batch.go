package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ac3/ac3/io/atomicfile"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
	"github.com/ac3/ac3/pipeline/llm/batch"
)

// Batch configures batch mode (see package batch): which roles use it is
// set per endpoint or role (llm.ModeBatch); these settings say how batches
// are made and what happens to their leftovers.
type Batch struct {
	// All puts every role in batch mode (--batch).
	All bool
	// Files: batches are not submitted to the endpoint; the stage queues
	// its requests in the run file and stops, for `ac3 batch export` and
	// `ac3 batch import` (vLLM run_batch, air-gapped clusters).
	Files bool
	// Fallback is batch.FallbackResubmit (default) or FallbackOnline.
	Fallback string
	// MaxRequests and MaxBytes bound one input file (defaults 50,000 and
	// 200 MB); MaxSubmits bounds the batches one request goes into.
	MaxRequests int
	MaxBytes    int64
	MaxSubmits  int
	// Poll is the longest wait between polls (default 30s); the first is
	// two seconds (less when Poll is), each next one twice the one before.
	Poll time.Duration
	// TempDir holds input files while they upload.
	TempDir string
}

// batchOn reports whether any role of m may go through batches.
func (m Model) batchOn() bool {
	if m.Options == nil || m.NoCache {
		return false
	}
	if m.Batch != nil && m.Batch.All {
		return true
	}
	for _, ep := range m.Options.Endpoints {
		if ep.Mode == llm.ModeBatch {
			return true
		}
	}
	for _, b := range m.Options.Roles {
		if b.Mode == llm.ModeBatch {
			return true
		}
	}
	return false
}

// batchOptions applies --batch to the client options.
func (m Model) batchOptions(opts *llm.Options) {
	if m.Batch != nil && m.Batch.All {
		setMode(opts, llm.ModeBatch)
	}
}

// setMode puts every endpoint and role of opts in mode, on copies of the
// endpoint list and role map (opts may share them with the plan).
func setMode(opts *llm.Options, mode llm.Mode) {
	opts.Endpoints = slices.Clone(opts.Endpoints)
	for i := range opts.Endpoints {
		opts.Endpoints[i].Mode = mode
	}
	roles := make(map[string]llm.RoleBinding, len(opts.Roles))
	for k, b := range opts.Roles {
		b.Mode = mode
		roles[k] = b
	}
	opts.Roles = roles
}

func (m Model) batchSettings() Batch {
	if m.Batch == nil {
		return Batch{}
	}
	return *m.Batch
}

// driver builds the batch driver of the run, once.
func (r *runner) driver(ctx context.Context) (*batch.Driver, error) {
	if r.batch != nil {
		return r.batch, nil
	}
	cl, err := r.plan.Model.client(ctx, r.l, nil, nil)
	if err != nil {
		return nil, err
	}
	b := r.plan.Model.batchSettings()
	d, err := batch.New(batch.Options{
		Client: cl, Ledger: r.l, MaxRequests: b.MaxRequests, MaxBytes: b.MaxBytes, MaxSubmits: b.MaxSubmits,
		Poll: b.Poll, Fallback: b.Fallback, Log: r.opts.Log, Stop: r.opts.Stop, TempDir: b.TempDir,
	})
	if err != nil {
		return nil, err
	}
	r.batch = d
	return d, nil
}

// maxBatchRounds bounds the pass → batch → pass loop of one group of
// stages: each round answers at least one request a pass asked for, and a
// stage asks again only for what depends on an answer (a next turn, a
// reroll), so stages needing more rounds than this are stuck.
const maxBatchRounds = 100

// awaitBatches submits what the stages' passes queued, in one round of
// batches (one input file per model, split at the API's limits), waits for
// the batches and imports their answers. It counts the round for the run
// and for each stage that waited in it. It reports false when the run must
// stop (Ctrl-C while batches run, or batch files to be exported by hand).
func (r *runner) awaitBatches(ctx context.Context, waiting []*groupStage) (bool, error) {
	for _, g := range waiting {
		r.logf("%s: %d tasks wait for batch answers\n", g.label, g.waitingTasks())
	}
	if r.plan.Model.batchSettings().Files {
		r.logf("write their requests with 'ac3 batch export', and load the results with 'ac3 batch import'\n")
		return false, nil
	}
	d, err := r.driver(ctx)
	if err != nil {
		return false, err
	}
	r.res.BatchRounds++
	for _, g := range waiting {
		g.res.BatchRounds++
	}
	err = d.Run(ctx)
	if errors.Is(err, batch.ErrStopped) {
		r.logf("stopped while batches run; they are recorded in the run, and the same command picks them up\n")
		return false, nil
	}
	return err == nil, err
}

// roundsOf is a group of stages that shared their batch rounds.
type roundsOf struct {
	labels []string
	rounds []int // each stage's
	shared int   // the group's
}

// noteRounds keeps the batch rounds a group of stages waited for, for the
// run's closing line.
func (r *runner) noteRounds(gs []*groupStage) {
	var g roundsOf
	for _, s := range gs {
		if s.res.BatchRounds > 0 {
			g.labels = append(g.labels, s.label)
			g.rounds = append(g.rounds, s.res.BatchRounds)
			g.shared = max(g.shared, s.res.BatchRounds)
		}
	}
	if len(g.labels) > 0 {
		r.rounds = append(r.rounds, g)
	}
}

// logRounds says, in the run's closing lines, how many rounds of batches
// the run waited for, by stage. Stages that shared their rounds are named
// together with the rounds they took as a group.
func (r *runner) logRounds() {
	if r.res.BatchRounds == 0 {
		return
	}
	var parts []string
	for _, g := range r.rounds {
		each := make([]string, len(g.labels))
		for i, l := range g.labels {
			each[i] = fmt.Sprintf("%s %d", l, g.rounds[i])
		}
		if len(each) == 1 {
			parts = append(parts, each[0])
			continue
		}
		parts = append(parts, fmt.Sprintf("%s in %d shared", strings.Join(each, " + "), g.shared))
	}
	r.logf("batch rounds: %d in all (%s)\n", r.res.BatchRounds, strings.Join(parts, ", "))
}

// CancelBatches asks the endpoints to cancel the run's live batches; their
// answers so far are imported when the run next waits for them.
func CancelBatches(ctx context.Context, db string, m Model) (int, error) {
	l, err := ledger.Open(ctx, db, ledger.Options{})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	cl, err := m.client(ctx, l, nil, nil)
	if err != nil {
		return 0, err
	}
	d, err := batch.New(batch.Options{Client: cl, Ledger: l})
	if err != nil {
		return 0, err
	}
	return d.Cancel(ctx)
}

// ExportBatch writes the requests of stage (every stage when "") that wait
// for a batch as one batch input file at out, in key order, and returns
// how many it wrote. The requests stay queued until a results file is
// imported, so exporting again writes them again.
func ExportBatch(ctx context.Context, db, stage, out string) (int64, error) {
	l, err := ledger.Open(ctx, db, ledger.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	var n int64
	f, err := atomicfile.Create(out)
	if err != nil {
		return 0, fmt.Errorf("exporting batch requests: %w", err)
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	err = l.QueuedRequests(ctx, stage, func(r ledger.BatchRequest, body []byte) error {
		var err error
		if line, err = batch.AppendInputLineURL(line[:0], batch.URLOf(body), r.Key, body); err != nil {
			return err
		}
		n++
		_, err = bw.Write(line)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Commit()
	}
	if err != nil {
		return 0, fmt.Errorf("exporting batch requests to %s: %w", out, err)
	}
	return n, nil
}

// BatchImport is what ImportBatch did with a results file.
type BatchImport struct {
	Imported int64 // answers stored in the run's cache
	Repeated int64 // answers to requests already answered (an import run twice)
	Errors   int64 // error lines: their requests stay queued
	// Unknown counts lines whose custom_id this run never asked for, or
	// asked of a batch still running; UnknownIDs holds the first few.
	Unknown    int64
	UnknownIDs []string
	Malformed  int64 // lines that are not batch results, or answers that are not completions
}

// WriteText prints what the import did, as 'ac3 batch import' shows it.
func (st BatchImport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "imported %d answers (%d already imported, %d error lines left queued, %d malformed lines skipped)\n",
		st.Imported, st.Repeated, st.Errors, st.Malformed)
	if st.Unknown > 0 {
		fmt.Fprintf(w, "skipped %d lines whose custom_id this run is not waiting for, e.g. %s\n", st.Unknown, strings.Join(st.UnknownIDs, ", "))
	}
}

// ErrForeignResults is returned by ImportBatch for a results file none of
// whose lines answer a request of the run.
var ErrForeignResults = errors.New("the results file answers none of this run's requests: it was made for another run or another prompt version; nothing was imported")

// ImportBatch imports a results file in the OpenAI batch output format
// into the run's cache, at the batch price. It is idempotent: an answer
// already imported is counted, not stored again. Lines with a custom_id
// the run did not ask for are reported and skipped; a file with no line
// for this run is refused with ErrForeignResults.
func ImportBatch(ctx context.Context, db string, m Model, results string) (BatchImport, error) {
	var st BatchImport
	f, err := os.Open(results)
	if err != nil {
		return st, fmt.Errorf("importing batch results: %w", err)
	}
	defer f.Close()
	l, err := ledger.Open(ctx, db, ledger.Options{})
	if err != nil {
		return st, err
	}
	defer l.Close()
	cl, err := m.client(ctx, l, nil, nil)
	if err != nil {
		return st, err
	}
	err = batch.ReadResults(f, func(line int, res batch.Result, perr error) error {
		if perr != nil {
			st.Malformed++
			return nil
		}
		req, ok, err := l.LookupBatchRequest(ctx, res.CustomID)
		if err != nil {
			return err
		}
		if !ok || req.State == ledger.ReqSubmitted {
			st.Unknown++
			if len(st.UnknownIDs) < 5 {
				st.UnknownIDs = append(st.UnknownIDs, res.CustomID)
			}
			return nil
		}
		if req.State != ledger.ReqQueued {
			st.Repeated++
			return nil
		}
		if !res.OK() {
			st.Errors++
			return nil
		}
		done, err := batch.Import(ctx, cl, l, 0, req, res.Body)
		switch {
		case err != nil && errors.Is(err, batch.ErrMalformed):
			st.Malformed++
		case err != nil:
			return err
		case done:
			st.Imported++
		default:
			st.Repeated++
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("importing %s: %w", results, err)
	}
	if st.Imported+st.Repeated+st.Errors == 0 && st.Unknown > 0 {
		return st, fmt.Errorf("importing %s: %w", results, ErrForeignResults)
	}
	return st, nil
}
