package ledger_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ac3/ac3/migrations"
	"github.com/ac3/ac3/pipeline/ledger"
)

func TestFailureReason(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "unknown"},
		{"turn 3: parsing model answer (3 tries): invalid character 'x' at offset 17", "parsing model answer (N tries): invalid character … at offset N"},
		{"parsing model answer (2 tries): invalid character 'y' at offset 4", "parsing model answer (N tries): invalid character … at offset N"},
		{`endpoint judge: 400 bad request: "prompt too long"`, "endpoint judge: N bad request: …"},
		{"  spaced\t\tout\n error  ", "spaced out error"},
		{"unterminated 'quote goes on", "unterminated …"},
	}
	for _, c := range cases {
		if got := ledger.FailureReason(c.in); got != c.want {
			t.Errorf("FailureReason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := ledger.FailureReason(strings.Repeat("word ", 100) + "x")
	if n := len([]rune(long)); n > 161 {
		t.Errorf("long reason has %d runes", n)
	}
}

func wantProgress(t *testing.T, got []ledger.StageStatus) {
	t.Helper()
	// buildRun fails turn 2 of ao for every 37th conversation: 0, 37, …, 370.
	aoFail := ledger.FailureGroup{
		Reason: "parsing model answer (N tries): invalid character … at offset N",
		Units:  11,
		Example: ledger.FailedUnit{ConvID: "conv-00000", ConvSeq: 1, Turn: 2,
			Error: "parsing model answer (3 tries): invalid character 'a' at offset 0"},
	}
	want := []ledger.StageStatus{
		{Stage: "curate", Variant: "fc", Version: "v1", Done: 400, UnitsDone: 1200, Failures: []ledger.FailureGroup{}},
		{Stage: "curate", Variant: "ao", Version: "v1", Done: 389, Failed: 11, UnitsDone: 1189, UnitsFailed: 11, Failures: []ledger.FailureGroup{aoFail}},
		{Stage: "curate", Variant: "lt", Version: "v1", Pending: 400, Failures: []ledger.FailureGroup{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("progress =\n%+v\nwant\n%+v", got, want)
	}
}

func TestProgress(t *testing.T) {
	ctx := context.Background()
	path := builtRun(t, 400)
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A planned variant with no task yet is all pending (never attempted).
	if err := l.SetPlan(ctx, "curate", append(testVariants, ledger.Variant{Name: "lt", Version: "v1"})); err != nil {
		t.Fatal(err)
	}
	got, err := l.Progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantProgress(t, got)
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Stages, got) {
		t.Fatalf("status stages differ from progress:\n%+v\n%+v", st.Stages, got)
	}
	one, err := l.StageProgress(ctx, "curate", ledger.Variant{Name: "ao", Version: "v1"})
	if err != nil || !reflect.DeepEqual(one, got[1]) {
		t.Fatalf("stage progress = %+v, %v", one, err)
	}
	// Another version of a variant has nothing recorded.
	other, err := l.StageProgress(ctx, "curate", ledger.Variant{Name: "ao", Version: "v2"})
	if err != nil || other.Done != 0 || other.Pending != 400 || len(other.Failures) != 0 {
		t.Fatalf("other version = %+v, %v", other, err)
	}
}

// A run file from before failure reasons were kept: read-only opens group
// its failures by streaming them, and the first writer fills the reasons in.
func TestProgressOfAnOlderRun(t *testing.T) {
	ctx := context.Background()
	src := builtRun(t, 400)
	path := filepath.Join(t.TempDir(), "old.db")
	// Rebuild the run as the schema before migration 0003, with the same
	// rows (the reason column and the new indexes left out).
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)`)
	for _, m := range all[:2] {
		if _, err := db.Exec(m.SQL); err != nil {
			t.Fatal(err)
		}
		db.Exec(`INSERT INTO schema_migrations VALUES (?, '')`, m.Name)
	}
	stmts := []string{
		fmt.Sprintf(`ATTACH DATABASE 'file:%s?mode=ro' AS src`, src),
		`INSERT INTO run_meta SELECT * FROM src.run_meta`,
		`INSERT INTO inputs SELECT * FROM src.inputs`,
		`INSERT INTO conversations SELECT seq, id, content_hash, input_id, source_line, source_row, format, user_turns, language, data FROM src.conversations`,
		`INSERT INTO tasks SELECT * FROM src.tasks`,
		`INSERT INTO units SELECT key, stage, conversation_id, conv_seq, turn, variant, version, status, attempts, error, raw, output, tokens FROM src.units`,
		`DETACH DATABASE src`,
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	// The plan with a variant that has no task yet; a reader cannot write
	// it, so it goes in through the raw file.
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT OR REPLACE INTO run_meta VALUES ('plan.curate', '[{"Name":"fc","Version":"v1"},{"Name":"ao","Version":"v1"},{"Name":"lt","Version":"v1"}]')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	ro, err := ledger.Open(ctx, path, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ro.Progress(ctx)
	ro.Close()
	if err != nil {
		t.Fatalf("progress of an older run, read-only: %v", err)
	}
	wantProgress(t, got)

	w, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, err = w.Progress(ctx); err != nil {
		t.Fatal(err)
	}
	wantProgress(t, got)
	check, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	var unreasoned int
	if err := check.QueryRow(`SELECT count(*) FROM units WHERE status = 'failed' AND reason = ''`).Scan(&unreasoned); err != nil || unreasoned != 0 {
		t.Fatalf("failed units left without a reason after a writer opened the run: %d, %v", unreasoned, err)
	}
}

func TestEachPending(t *testing.T) {
	ctx := context.Background()
	l, _ := mustOpen(t)
	if err := ingestN(ctx, l, "/x.jsonl", 1000); err != nil {
		t.Fatal(err)
	}
	fc, ao, lt := ledger.Variant{Name: "fc", Version: "v1"}, ledger.Variant{Name: "ao", Version: "v1"}, ledger.Variant{Name: "lt", Version: "v1"}
	// fc done everywhere but seq 500; ao done (or failed) on odd seqs; lt
	// recorded at another version only.
	var tasks []ledger.TaskResult
	for seq := int64(1); seq <= 1000; seq++ {
		id := fmt.Sprintf("c%05d", seq-1)
		if seq != 500 {
			tasks = append(tasks, ledger.TaskResult{TaskID: ledger.TaskID{Stage: "curate", Variant: "fc", Version: "v1", ConvSeq: seq}, ConvID: id, Status: ledger.Done})
		}
		if seq%2 == 1 {
			st := ledger.Done
			if seq%3 == 0 {
				st = ledger.Failed
			}
			tasks = append(tasks, ledger.TaskResult{TaskID: ledger.TaskID{Stage: "curate", Variant: "ao", Version: "v1", ConvSeq: seq}, ConvID: id, Status: st})
		}
		tasks = append(tasks, ledger.TaskResult{TaskID: ledger.TaskID{Stage: "curate", Variant: "lt", Version: "v0", ConvSeq: seq}, ConvID: id, Status: ledger.Done})
	}
	if err := l.CommitTasks(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		variants []ledger.Variant
		want     func(seq int64) []ledger.Variant
	}{
		{"one variant, one pending", []ledger.Variant{fc}, func(seq int64) []ledger.Variant {
			if seq == 500 {
				return []ledger.Variant{fc}
			}
			return nil
		}},
		{"two variants", []ledger.Variant{fc, ao}, func(seq int64) []ledger.Variant {
			var out []ledger.Variant
			if seq == 500 {
				out = append(out, fc)
			}
			if seq%2 == 0 {
				out = append(out, ao)
			}
			return out
		}},
		{"another version is pending", []ledger.Variant{lt, fc}, func(seq int64) []ledger.Variant {
			if seq == 500 {
				return []ledger.Variant{lt, fc}
			}
			return []ledger.Variant{lt}
		}},
	}
	for _, c := range cases {
		for _, size := range []int{1, 7, 512, 5000} {
			t.Run(fmt.Sprintf("%s/page %d", c.name, size), func(t *testing.T) {
				var got []ledger.Pending
				err := l.EachPending(ctx, "curate", c.variants, size, func(page []ledger.Pending) error {
					if len(page) == 0 {
						t.Error("called with an empty page")
					}
					if len(page) > 128 {
						t.Errorf("called with %d pending conversations at once, want at most 128 decoded at a time", len(page))
					}
					got = append(got, page...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				var want []ledger.Pending
				for seq := int64(1); seq <= 1000; seq++ {
					if vs := c.want(seq); len(vs) > 0 {
						want = append(want, ledger.Pending{Stored: ledger.Stored{Seq: seq}, Variants: vs})
					}
				}
				if len(got) != len(want) {
					t.Fatalf("%d pending, want %d", len(got), len(want))
				}
				for i := range want {
					if got[i].Seq != want[i].Seq || !reflect.DeepEqual(got[i].Variants, want[i].Variants) {
						t.Fatalf("pending[%d] = seq %d %v, want seq %d %v", i, got[i].Seq, got[i].Variants, want[i].Seq, want[i].Variants)
					}
					if got[i].Conv == nil || got[i].Conv.ID != fmt.Sprintf("c%05d", got[i].Seq-1) {
						t.Fatalf("pending seq %d carries conversation %+v", got[i].Seq, got[i].Conv)
					}
				}
			})
		}
	}
	stop := fmt.Errorf("enough")
	if err := l.EachPending(ctx, "curate", []ledger.Variant{ao}, 10, func([]ledger.Pending) error { return stop }); err != stop {
		t.Fatalf("callback error came back as %v", err)
	}
}
