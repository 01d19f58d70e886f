// Package ingest loads conversation files into a run's ledger: it reads each
// file with the reader its content calls for, applies the filters, and
// commits kept conversations, drop counts, quarantined records and the file's
// position together in batches, so an interrupted ingest resumes exactly
// where its last commit left off.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/record"
)

// Opener opens an input file and names the format it found. Its errors
// name the file (detect.Open's do); ingest returns them as they are.
type Opener func(ctx context.Context, path string) (record.Reader, string, error)

// Keep decides whether a conversation is kept, and if not, names the reason.
type Keep func(c *conv.Conversation) (keep bool, reason string)

// Options tune an ingest.
type Options struct {
	Open Opener
	Keep Keep // nil keeps everything
	// Dedupe drops conversations whose content was already kept.
	Dedupe bool
	// Near, when set, also drops conversations whose user turns nearly
	// repeat a kept one's (ledger.NearDedupe; --dedupe near).
	Near *ledger.NearDedupe
	// Owns, when set, says which conversations this process keeps (a shard
	// of a sharded run): the others are passed over without being counted
	// anywhere, so the shards' counts add up to one whole run's.
	Owns func(id string) bool
	// SkipBad passes over unreadable records instead of quarantining them:
	// in a sharded run only one shard (shard 0) keeps them.
	SkipBad bool
	// Settings is a canonical description of the filters (JSON). A run keeps
	// the settings it was first ingested with; ingesting more files into it
	// with other settings is refused, because the run would mix two samples.
	Settings string
	// BatchSize is how many records go into one commit at most (default
	// 2000), and BatchBytes how many bytes of kept conversations (their
	// Size, default 8 MiB): the batch is what ingest holds in memory, and
	// bounding it by bytes keeps that flat however long the conversations
	// of a stretch of the file are.
	BatchSize  int
	BatchBytes int
	// Stop, when closed, ends the ingest at the next commit.
	Stop <-chan struct{}
	// OnBatch is called after each commit with the records it covered.
	OnBatch func(path string, records int64, res ledger.IngestResult, bad int)
}

// FileSummary says what happened to one input file.
type FileSummary struct {
	Path     string
	Format   string
	Records  int64 // records read this time
	Kept     int64
	Dropped  map[string]int64
	Bad      int64
	Skipped  bool // already fully ingested
	Resumed  int64
	Finished bool
}

// Summary says what an ingest did.
type Summary struct {
	Files   []FileSummary
	Stopped bool
}

// ErrSettingsChanged is returned when a run is ingested into with filters
// other than the ones it was started with.
var ErrSettingsChanged = errors.New("filters differ from the ones this run was ingested with")

const settingsKey = "ingest.settings"

// Run ingests files into l in order.
func Run(ctx context.Context, l *ledger.Ledger, files []string, opts Options) (Summary, error) {
	var sum Summary
	if opts.BatchSize <= 0 {
		opts.BatchSize = 2000
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = 8 << 20
	}
	prev, ok, err := l.Meta(ctx, settingsKey)
	if err != nil {
		return sum, err
	}
	if ok && prev != opts.Settings {
		return sum, fmt.Errorf("ingesting into %s: %w (was %s, now %s); use a new --db", l.Path(), ErrSettingsChanged, prev, opts.Settings)
	}
	if !ok {
		if err := l.SetMeta(ctx, settingsKey, opts.Settings); err != nil {
			return sum, err
		}
	}
	for _, f := range files {
		fs, err := ingestFile(ctx, l, f, opts)
		sum.Files = append(sum.Files, fs)
		if err != nil {
			return sum, err
		}
		if !fs.Finished {
			sum.Stopped = true
			return sum, nil
		}
	}
	return sum, nil
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func ingestFile(ctx context.Context, l *ledger.Ledger, path string, opts Options) (FileSummary, error) {
	fs := FileSummary{Path: path, Dropped: map[string]int64{}}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fs, fmt.Errorf("resolving %s: %w", path, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return fs, fmt.Errorf("reading %s: %w", path, err)
	}
	in, known, err := l.Input(ctx, abs)
	if err != nil {
		return fs, err
	}
	if known {
		fs.Format = in.Format
		if in.Size != st.Size() || in.MTimeNs != st.ModTime().UnixNano() {
			if in.RecordsDone > 0 || in.Finished {
				return fs, fmt.Errorf("ingesting %s: the file changed (size or time) since this run read %d records of it; restore the file it read, or ingest the new one into a new run (--db NEW.db)", path, in.RecordsDone)
			}
			// Nothing of the old file is in the run (it failed before its
			// first batch, e.g. damaged): the new one is read from the start.
			if err := l.ReplaceInputFile(ctx, in.ID, st.Size(), st.ModTime().UnixNano()); err != nil {
				return fs, err
			}
		}
		if in.Finished {
			fs.Skipped, fs.Finished = true, true
			return fs, nil
		}
	}
	r, format, err := opts.Open(ctx, abs)
	if err != nil {
		return fs, err // the opener's errors name the file
	}
	defer r.Close()
	fs.Format = format
	if !known {
		in, err = l.AddInput(ctx, ledger.Input{Path: abs, Format: format, Size: st.Size(), MTimeNs: st.ModTime().UnixNano()})
		if err != nil {
			return fs, err
		}
	}
	// Resume: the records before in.RecordsDone are committed already.
	pos := int64(0)
	for pos < in.RecordsDone {
		if _, err := r.Next(ctx); err != nil {
			if errors.Is(err, io.EOF) {
				return fs, fmt.Errorf("resuming %s: the file has %d records, the run had read %d", path, pos, in.RecordsDone)
			}
			return fs, fmt.Errorf("resuming %s at record %d: %w", path, pos, err)
		}
		pos++
	}
	fs.Resumed = pos

	batch := ledger.IngestBatch{InputID: in.ID, Dedupe: opts.Dedupe, Near: opts.Near, Drops: map[string]int64{}}
	var inBatch int64
	batchBytes := 0
	commit := func(finished bool) error {
		batch.RecordsDone, batch.Finished = pos, finished
		// Finish the commit even if a second Ctrl-C arrives meanwhile.
		res, err := l.CommitIngest(context.WithoutCancel(ctx), batch)
		if err != nil {
			return fmt.Errorf("ingesting %s: %w", path, err)
		}
		fs.Kept += res.Kept
		for k, v := range batch.Drops {
			fs.Dropped[k] += v
		}
		if res.Duplicates > 0 {
			fs.Dropped[ledger.DropDuplicate] += res.Duplicates
		}
		if res.DupIDs > 0 {
			fs.Dropped[ledger.DropDuplicateID] += res.DupIDs
		}
		if res.NearDups > 0 {
			fs.Dropped[ledger.DropNearDuplicate] += res.NearDups
		}
		fs.Bad += int64(len(batch.Bad))
		if opts.OnBatch != nil {
			opts.OnBatch(path, inBatch, res, len(batch.Bad))
		}
		// Cleared, not just cut: a smaller next batch would otherwise keep
		// this one's conversations reachable from the tail of the array.
		clear(batch.Kept)
		clear(batch.Bad)
		batch.Kept, batch.Bad = batch.Kept[:0], batch.Bad[:0]
		batch.Drops = map[string]int64{}
		inBatch, batchBytes = 0, 0
		return nil
	}
	for {
		if ctx.Err() != nil {
			return fs, ctx.Err()
		}
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			if err := commit(true); err != nil {
				return fs, err
			}
			fs.Finished = true
			return fs, nil
		}
		if err != nil {
			// What came before is good: keep it, then report.
			if cerr := commit(false); cerr != nil {
				return fs, errors.Join(err, cerr)
			}
			return fs, fmt.Errorf("reading %s after record %d: %w", path, pos, err)
		}
		pos++
		inBatch++
		fs.Records++
		switch {
		case rec.Bad != nil:
			if !opts.SkipBad {
				batch.Bad = append(batch.Bad, *rec.Bad)
			}
		case rec.Conv != nil && opts.Owns != nil && !opts.Owns(rec.Conv.ID):
		case rec.Conv != nil:
			if opts.Keep != nil {
				if keep, reason := opts.Keep(rec.Conv); !keep {
					batch.Drops[reason]++
					break
				}
			}
			batch.Kept = append(batch.Kept, rec.Conv)
			batchBytes += rec.Conv.Size()
		}
		if inBatch >= int64(opts.BatchSize) || batchBytes >= opts.BatchBytes {
			if err := commit(false); err != nil {
				return fs, err
			}
			if stopped(opts.Stop) {
				return fs, nil
			}
		}
	}
}
