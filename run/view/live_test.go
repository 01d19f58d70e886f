package view

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/stages/respond"
)

func copyRun(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "run.db")
	for _, suffix := range []string{"", "-wal"} {
		src, err := os.Open(fixtureRun + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(dst + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestReadsWhileAnotherProcessWrites serves a run while a writer keeps
// committing to it: the writer is never held up by the view, and the view
// shows each commit on the next request.
func TestReadsWhileAnotherProcessWrites(t *testing.T) {
	ctx := testCtx(t)
	path := copyRun(t)
	w, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, srv := server(t, r)
	h.pageSize = 1000
	count := func() int {
		ids, _ := listed(t, get(t, srv, "/conversations?done=respond", http.StatusOK))
		return len(ids)
	}
	before := count()

	all, err := w.ConversationPage(ctx, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	var commits atomic.Int64
	werr := make(chan error, 1)
	go func() {
		v := ledger.Variant{Name: "fc", Version: respVer}
		out, _ := json.Marshal(respond.Output{Strategy: "fc", Samples: []respond.Sample{{Text: "written while the view reads"}}})
		for _, s := range all[judged:] {
			if wctx.Err() != nil {
				break
			}
			err := w.CommitTasks(wctx, []ledger.TaskResult{{TaskID: ledger.TaskID{Stage: respond.StageName, Variant: v.Name, Version: v.Version, ConvSeq: s.Seq}, ConvID: s.Conv.ID, Status: ledger.Done, Attempts: 1,
				Units: []ledger.UnitResult{{Turn: 2, Status: ledger.Done, Attempts: 1, Output: out}}}})
			if err != nil && wctx.Err() == nil {
				werr <- err
				return
			}
			commits.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
		werr <- nil
	}()
	deadline := time.Now().Add(30 * time.Second)
	grew := false
	for time.Now().Before(deadline) && !grew {
		get(t, srv, "/", http.StatusOK)
		get(t, srv, "/conversation/"+all[0].Conv.ID, http.StatusOK)
		if n := count(); n > before && commits.Load() > 0 {
			grew = true
		}
	}
	stop()
	if err := <-werr; err != nil {
		t.Fatalf("the writer failed while the view read: %v", err)
	}
	if !grew {
		t.Fatalf("the list never showed the writer's commits (%d commits, %d listed before)", commits.Load(), before)
	}
}
