package ledger_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm"
)

var testVariants = []ledger.Variant{{Name: "fc", Version: "v1"}, {Name: "ao", Version: "v1"}}

// buildRun writes a closed, checkpointed run at path the way a real one is
// filled: n conversations ingested in batches, both curate variants done
// for each (a few units failed), answers in the model cache and call rows.
// Text is random words from a fixed seed, so blobs span pages.
func buildRun(tb testing.TB, path string, n int) {
	tb.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the model answer code error value list file data query loop string return class method test please explain why fix write again")
	text := func(k int) string {
		var b strings.Builder
		for range k {
			b.WriteString(words[rng.IntN(len(words))])
			fmt.Fprintf(&b, "%d ", rng.IntN(1000))
		}
		return b.String()
	}
	in, err := l.AddInput(ctx, ledger.Input{Path: "/dump.jsonl", Format: "wildchat"})
	if err != nil {
		tb.Fatal(err)
	}
	if err := l.SetPlan(ctx, "curate", testVariants); err != nil {
		tb.Fatal(err)
	}
	const batch = 100
	for start := 0; start < n; start += batch {
		var kept []*conv.Conversation
		for i := start; i < min(start+batch, n); i++ {
			c := &conv.Conversation{ID: fmt.Sprintf("conv-%05d", i), Format: "wildchat"}
			for range 3 {
				c.Messages = append(c.Messages, conv.Message{Role: conv.User, Content: text(40)}, conv.Message{Role: conv.Assistant, Content: text(300)})
			}
			kept = append(kept, c)
		}
		if _, err := l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, RecordsDone: int64(start + len(kept)), Finished: start+batch >= n, Kept: kept}); err != nil {
			tb.Fatal(err)
		}
		var tasks []ledger.TaskResult
		for i, c := range kept {
			seq := int64(start + i + 1)
			for _, v := range testVariants {
				tr := ledger.TaskResult{TaskID: ledger.TaskID{Stage: "curate", Variant: v.Name, Version: v.Version, ConvSeq: seq}, ConvID: c.ID, Status: ledger.Done, Attempts: 1}
				for turn := 1; turn <= 3; turn++ {
					u := ledger.UnitResult{Turn: turn, Status: ledger.Done, Attempts: 1, Output: []byte(text(60)), Tokens: 100}
					if (start+i)%37 == 0 && turn == 2 && v.Name == "ao" {
						u = ledger.UnitResult{Turn: turn, Status: ledger.Failed, Attempts: 3, Error: fmt.Sprintf("parsing model answer (3 tries): invalid character '%c' at offset %d", 'a'+rune(i%26), i), Raw: "nonsense"}
						tr.Status, tr.Error = ledger.Failed, "turn 2: "+u.Error
					}
					tr.Units = append(tr.Units, u)
				}
				tasks = append(tasks, tr)
			}
			key := fmt.Sprintf("%064x", seq)
			if err := l.LLMCache().Put(ctx, key, llm.CachedResponse{Text: text(50), Model: "m"}); err != nil {
				tb.Fatal(err)
			}
			if err := l.LLMRecorder().Record(ctx, llm.CallRecord{Role: "analyzer", Stage: "curate", Model: "m", CostUSD: 0.001, Status: llm.StatusOK, Time: time.Unix(0, 0)}); err != nil {
				tb.Fatal(err)
			}
		}
		if err := l.CommitTasks(ctx, tasks); err != nil {
			tb.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		tb.Fatal("the run's log was not checkpointed on close")
	}
}

// built holds the runs buildRun made, by size, so each is built once per
// test binary; TestMain removes the folder.
var built struct {
	sync.Mutex
	dir  string
	runs map[int]string
}

// builtRun returns a fresh copy of a run built by buildRun with n
// conversations, in the test's own folder.
func builtRun(tb testing.TB, n int) string {
	tb.Helper()
	built.Lock()
	defer built.Unlock()
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "ac3-ledger-test-")
		if err != nil {
			tb.Fatal(err)
		}
		built.dir, built.runs = dir, map[int]string{}
	}
	src, ok := built.runs[n]
	if !ok {
		src = filepath.Join(built.dir, fmt.Sprintf("built-%d.db", n))
		buildRun(tb, src, n)
		built.runs[n] = src
	}
	path := filepath.Join(tb.TempDir(), "built.db")
	copyFile(tb, src, path)
	return path
}

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

// overwrite writes count pages of garbage from page number first (1-based).
func overwrite(tb testing.TB, path string, pageSize, first, count int64) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	junk := make([]byte, pageSize*count)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range junk {
		junk[i] = byte(rng.UintN(256))
	}
	if _, err := f.WriteAt(junk, (first-1)*pageSize); err != nil {
		tb.Fatal(err)
	}
}

// layout reads the page size, page count and every table's and index's
// root page of a sound run file.
func layout(tb testing.TB, path string) (pageSize, pages int64, roots map[string]int64) {
	tb.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		tb.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		tb.Fatal(err)
	}
	roots = map[string]int64{}
	rows, err := db.Query("SELECT name, rootpage FROM sqlite_master WHERE rootpage > 0")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var root int64
		if err := rows.Scan(&name, &root); err != nil {
			tb.Fatal(err)
		}
		roots[name] = root
	}
	return pageSize, pages, roots
}

// The ledger calls each command makes, in order; each returns the first
// error it meets.
var commandCalls = map[string]func(ctx context.Context, path string) error{
	"status": func(ctx context.Context, path string) error {
		l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer l.Close()
		_, err = l.Status(ctx)
		return err
	},
	"export": func(ctx context.Context, path string) error {
		l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer l.Close()
		return l.EachPage(ctx, 64, func(page []ledger.Stored, after, upto int64) error {
			return l.Units(ctx, "curate", testVariants, after, upto, func(ledger.Unit) error { return nil })
		})
	},
	"curate": func(ctx context.Context, path string) error {
		l, err := ledger.Open(ctx, path, ledger.Options{})
		if err != nil {
			return err
		}
		defer l.Close()
		if _, err := l.CountConversations(ctx); err != nil {
			return err
		}
		for _, v := range testVariants {
			if _, _, err := l.TaskCounts(ctx, "curate", v); err != nil {
				return err
			}
		}
		// The planner's scan (engine plan).
		return l.EachPage(ctx, 64, func(page []ledger.Stored, after, upto int64) error {
			_, err := l.TaskStates(ctx, "curate", testVariants, after, upto)
			return err
		})
	},
}

func TestDamageInTheMiddle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := builtRun(t, 400)
	pageSize, pages, _ := layout(t, src)
	path := filepath.Join(t.TempDir(), "run.db")
	copyFile(t, src, path)
	overwrite(t, path, pageSize, pages/2, 8)

	// Export reads every conversation, so it meets the damage itself.
	err := commandCalls["export"](ctx, path)
	var de *ledger.DamagedError
	if !errors.As(err, &de) || !errors.Is(err, ledger.ErrDamaged) {
		t.Fatalf("export of a damaged run: %v; want ErrDamaged", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "run file "+path+" is damaged: ") || strings.Contains(msg, "\n") {
		t.Fatalf("message %q: want one line starting 'run file %s is damaged: '", msg, path)
	}
	// From then on every command refuses the file at once, including those
	// that would only have counted tasks ("nothing to do").
	for name, calls := range commandCalls {
		if err := calls(ctx, path); !errors.Is(err, ledger.ErrDamaged) {
			t.Errorf("%s after the damage was found: %v; want ErrDamaged", name, err)
		} else if !strings.Contains(err.Error(), "ac3 doctor --db "+path) {
			t.Errorf("%s: %q does not say how to check the file", name, err)
		}
	}
	// A full check confirms it and keeps the note.
	res, err := ledger.Check(ctx, path)
	if err != nil || res.OK || len(res.Problems) == 0 {
		t.Fatalf("check of the damaged run = %+v, %v", res, err)
	}
	if _, err := os.Stat(path + ledger.DamageSuffix); err != nil {
		t.Fatalf("damage note: %v", err)
	}
}

// Every entry point that reads a damaged structure says so, whichever
// table or index the damage hit.
func TestDamagedStructures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := builtRun(t, 300)
	pageSize, _, roots := layout(t, src)
	type call struct {
		name string
		fn   func(*ledger.Ledger) error
	}
	var (
		countConvs = call{"CountConversations", func(l *ledger.Ledger) error { _, err := l.CountConversations(ctx); return err }}
		page       = call{"ConversationPage", func(l *ledger.Ledger) error { _, err := l.ConversationPage(ctx, 0, 1000); return err }}
		eachPage   = call{"EachPage", func(l *ledger.Ledger) error {
			return l.EachPage(ctx, 50, func([]ledger.Stored, int64, int64) error { return nil })
		}}
		byID       = call{"Conversation", func(l *ledger.Ledger) error { _, _, err := l.Conversation(ctx, "conv-00150"); return err }}
		taskCounts = call{"TaskCounts", func(l *ledger.Ledger) error { _, _, err := l.TaskCounts(ctx, "curate", testVariants[0]); return err }}
		taskStates = call{"TaskStates", func(l *ledger.Ledger) error { _, err := l.TaskStates(ctx, "curate", testVariants, 0, 1000); return err }}
		units      = call{"Units", func(l *ledger.Ledger) error {
			return l.Units(ctx, "curate", testVariants, 0, 1000, func(ledger.Unit) error { return nil })
		}}
		status   = call{"Status", func(l *ledger.Ledger) error { _, err := l.Status(ctx); return err }}
		progress = call{"Progress", func(l *ledger.Ledger) error { _, err := l.Progress(ctx); return err }}
		cacheGet = call{"LLMCache.Get", func(l *ledger.Ledger) error {
			_, _, err := l.LLMCache().Get(ctx, fmt.Sprintf("%064x", 150))
			return err
		}}
		spend     = call{"SpendUSD", func(l *ledger.Ledger) error { _, err := l.SpendUSD(ctx); return err }}
		inputs    = call{"Inputs", func(l *ledger.Ledger) error { _, err := l.Inputs(ctx); return err }}
		convUnits = call{"ConversationUnits", func(l *ledger.Ledger) error {
			_, err := l.ConversationUnits(ctx, "curate", "conv-00150", 0)
			return err
		}}
	)
	cases := []struct {
		structure string
		calls     []call
	}{
		{"conversations", []call{page, eachPage, byID}},
		{"sqlite_autoindex_conversations_1", []call{countConvs, byID}},
		{"tasks", []call{taskCounts, taskStates, status, progress}},
		{"units", []call{units, convUnits}},
		{"units_by_status", []call{status, progress}},
		{"llm_cache", []call{cacheGet}},
		{"llm_calls", []call{spend, status}},
		{"inputs", []call{inputs, status}},
	}
	for _, c := range cases {
		t.Run(c.structure, func(t *testing.T) {
			root, ok := roots[c.structure]
			if !ok {
				t.Fatalf("no root page for %s", c.structure)
			}
			for _, cl := range c.calls {
				// A fresh copy each time, so no damage note from an
				// earlier call hides what this one does.
				path := filepath.Join(t.TempDir(), "run.db")
				copyFile(t, src, path)
				overwrite(t, path, pageSize, root, 1)
				l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
				if err != nil {
					t.Fatalf("opening: %v", err)
				}
				err = cl.fn(l)
				l.Close()
				if !errors.Is(err, ledger.ErrDamaged) {
					t.Errorf("%s with %s damaged: %v; want ErrDamaged", cl.name, c.structure, err)
				}
			}
		})
	}
}

func TestDamagedBlobs(t *testing.T) {
	ctx := context.Background()
	src := builtRun(t, 20)
	path := filepath.Join(t.TempDir(), "run.db")
	copyFile(t, src, path)
	// Flip bytes inside one stored conversation and one cached answer: the
	// pages stay sound, only the values no longer decode.
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE conversations SET data = substr(data, 1, 10) || x'00ff00ff' || substr(data, 15) WHERE id = 'conv-00007'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE llm_cache SET response = x'7b7b' WHERE key = ?`, fmt.Sprintf("%064x", 3)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	l, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, _, err := l.Conversation(ctx, "conv-00007"); !errors.Is(err, ledger.ErrDamaged) || !strings.Contains(err.Error(), "conv-00007") {
		t.Errorf("conversation with a broken blob: %v; want ErrDamaged naming it", err)
	}
	if err := l.EachPage(ctx, 5, func([]ledger.Stored, int64, int64) error { return nil }); !errors.Is(err, ledger.ErrDamaged) {
		t.Errorf("paging over a broken blob: %v; want ErrDamaged", err)
	}
	if _, _, err := l.LLMCache().Get(ctx, fmt.Sprintf("%064x", 3)); !errors.Is(err, ledger.ErrDamaged) {
		t.Errorf("cached answer that does not decode: %v; want ErrDamaged", err)
	}
}

func TestCallbackErrorsPassThrough(t *testing.T) {
	ctx := context.Background()
	l, _ := mustOpen(t)
	if err := ingestN(ctx, l, "/x", 3); err != nil {
		t.Fatal(err)
	}
	// A callback's own failure (here a full disk while writing an export)
	// is not the run file's: it comes back as it was.
	mine := fmt.Errorf("writing export: %w", os.NewSyscallError("write", errNoSpace))
	err := l.EachPage(ctx, 10, func([]ledger.Stored, int64, int64) error { return mine })
	if err != mine {
		t.Fatalf("EachPage returned %v, want the callback's error unchanged", err)
	}
}

func TestCutShortRun(t *testing.T) {
	ctx := context.Background()
	src := builtRun(t, 50)
	path := filepath.Join(t.TempDir(), "run.db")
	copyFile(t, src, path)
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()/2+100); err != nil {
		t.Fatal(err)
	}
	_, err := ledger.Open(ctx, path, ledger.Options{})
	if !errors.Is(err, ledger.ErrDamaged) || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("writer open of a truncated run: %v; want ErrDamaged saying it was cut short", err)
	}
	notRun := filepath.Join(t.TempDir(), "dump.jsonl")
	os.WriteFile(notRun, []byte(`{"conversation_hash": "x"}`+"\n"), 0o644)
	_, err = ledger.Open(ctx, notRun, ledger.Options{ReadOnly: true})
	if !errors.Is(err, ledger.ErrDamaged) || !strings.Contains(err.Error(), "SQLite header") {
		t.Fatalf("opening a JSONL file as a run: %v", err)
	}
	if _, err := os.Stat(notRun + ledger.DamageSuffix); err == nil {
		t.Fatal("a file that is not a run got a damage note")
	}
}

func TestCheckSoundRunClearsNote(t *testing.T) {
	ctx := context.Background()
	path := builtRun(t, 10)
	os.WriteFile(path+ledger.DamageSuffix, []byte("database disk image is malformed\n"), 0o644)
	if _, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true}); !errors.Is(err, ledger.ErrDamaged) {
		t.Fatalf("open with a damage note: %v", err)
	}
	res, err := ledger.Check(ctx, path)
	if err != nil || !res.OK || !res.NoteCleared {
		t.Fatalf("check of a sound run = %+v, %v; want ok and the note cleared", res, err)
	}
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatalf("open after the check: %v", err)
	}
	l.Close()
}

// middleLeaf walks a table's b-tree from its root page down the middle
// child of each interior page and returns the leaf it reaches, so a test
// can damage some rows of one table and nothing else.
func middleLeaf(tb testing.TB, path string, pageSize, root int64) int64 {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, pageSize)
	page := root
	for {
		if _, err := f.ReadAt(buf, (page-1)*pageSize); err != nil {
			tb.Fatal(err)
		}
		switch buf[0] {
		case 0x0d, 0x0a: // table or index leaf
			return page
		case 0x05, 0x02: // interior: cells start with a child page number
			cells := int(buf[3])<<8 | int(buf[4])
			if cells == 0 {
				page = int64(binary.BigEndian.Uint32(buf[8:12]))
				continue
			}
			ptr := 12 + 2*(cells/2)
			off := int(buf[ptr])<<8 | int(buf[ptr+1])
			page = int64(binary.BigEndian.Uint32(buf[off : off+4]))
		default:
			tb.Fatalf("page %d has type %#x, not a b-tree page", page, buf[0])
		}
	}
}
