package export_test

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/io/compress"
	"github.com/ac3/ac3/run/export"
)

// TestSFTExport writes the SFT export of the judged run (fc and ao on three
// conversations) and its metadata: a line of metadata per line of training
// data, naming the conversation, turn and strategy; weights that follow the
// origins; --strategies choosing what goes in; and a summary that says
// what was left out and why.
func TestSFTExport(t *testing.T) {
	l := judgedRun(t)
	path, st := write(t, l, export.KindCurated, export.SFT, "train.jsonl", export.Options{})
	meta := export.MetaPath(path)
	if st.Rows != 8 || !maps.Equal(st.Skipped, map[string]int64{export.SkippedNoReply: 2}) ||
		!slices.Equal(st.Strategies, []string{"fc", "ao"}) || !slices.Equal(st.Files, []string{meta}) {
		t.Errorf("stats %+v", st)
	}
	lines, metas := readLines(t, path), readLines(t, meta)
	if len(lines) != 8 || len(metas) != 8 {
		t.Fatalf("%d lines, %d lines of metadata", len(lines), len(metas))
	}
	seen := map[string]bool{}
	for i, line := range lines {
		if len(line) != 1 || line["messages"] == nil {
			t.Fatalf("line %d has keys other than messages: %v", i+1, line)
		}
		m := metas[i]
		if m["line"].(float64) != float64(i+1) || m["source_file"] != "in.jsonl" {
			t.Errorf("metadata line %d: %v", i+1, m)
		}
		msgs, origins := line["messages"].([]any), m["origins"].([]any)
		if len(msgs) != len(origins) {
			t.Fatalf("line %d: %d messages, %d origins", i+1, len(msgs), len(origins))
		}
		strategy := m["strategy"].(string)
		seen[strategy] = true
		for k, x := range msgs {
			msg, o := x.(map[string]any), origins[k].(string)
			w, weighted := msg["weight"]
			switch {
			case msg["role"] != "assistant":
				if weighted {
					t.Errorf("line %d: %s message %d weighted", i+1, msg["role"], k)
				}
			case k == len(msgs)-1:
				if w != 1.0 || int(m["target"].(float64)) != refOf(t, o) {
					t.Errorf("line %d: target %v weight %v, metadata %v", i+1, o, w, m)
				}
			case strategy == "ao":
				if w != 0.0 || o != "inserted" || msg["content"] != "[earlier reply omitted]" {
					t.Errorf("line %d: ao's message %d (%s) weight %v", i+1, k, o, w)
				}
			default:
				if w != 1.0 || !strings.HasPrefix(o, "dataset:") {
					t.Errorf("line %d: fc's message %d (%s) weight %v", i+1, k, o, w)
				}
			}
		}
	}
	if !seen["fc"] || !seen["ao"] {
		t.Errorf("strategies seen: %v", seen)
	}

	// ao only, compressed, training on the target only.
	_, st = write(t, l, export.KindCurated, export.SFT, "ao.jsonl.zst", export.Options{Curated: export.CuratedOptions{Strategies: []string{"ao"}, TrainOn: export.TrainTarget}})
	if !strings.HasSuffix(st.Files[0], "ao.meta.jsonl.zst") || compress.FromName(st.Files[0]) != compress.Zstd {
		t.Errorf("metadata at %s", st.Files[0])
	}
	if st.Rows != 4 || !maps.Equal(st.Skipped, map[string]int64{export.SkippedStrategy: 5, export.SkippedNoReply: 1}) || !slices.Equal(st.Strategies, []string{"ao"}) {
		t.Errorf("--strategies ao: stats %+v", st)
	}
	want := "wrote 4 curated rows to ao.jsonl.zst (strategies ao; metadata in " + st.Files[0] + "); left out 6: 5 strategy not chosen (--strategies), 1 no reply in the dataset to train towards"
	if s := st.Summary("curated", "ao.jsonl.zst"); s != want {
		t.Errorf("summary\n%q\nwant\n%q", s, want)
	}

	// A strategy the run did not curate is refused, naming those it did.
	_, err := export.Write(context.Background(), l, export.KindCurated, export.SFT, filepath.Join(t.TempDir(), "x.jsonl"), export.Options{Curated: export.CuratedOptions{Strategies: []string{"lt"}}})
	if err == nil || !strings.Contains(err.Error(), `"lt"`) || !strings.Contains(err.Error(), "fc, ao") {
		t.Errorf("--strategies lt: %v", err)
	}
	for _, bad := range []export.Options{
		{Curated: export.CuratedOptions{TrainOn: "everything"}},
		{Curated: export.CuratedOptions{Strategies: []string{"fc"}}},
	} {
		if err := bad.Check(export.KindPreferences); err == nil {
			t.Errorf("%+v accepted for preferences", bad.Curated)
		}
	}
}

// TestCuratedExportOrigins: the curated export's origins column names where
// each message of the context came from, in JSONL as in Parquet.
func TestCuratedExportOrigins(t *testing.T) {
	l := judgedRun(t)
	path, st := write(t, l, export.KindCurated, export.JSONL, "curated.jsonl", export.Options{Curated: export.CuratedOptions{Strategies: []string{"ao"}}})
	rows := readLines(t, path)
	if st.Rows != 5 || len(rows) != 5 {
		t.Fatalf("%d rows (stats %+v)", len(rows), st)
	}
	got := rows[1]["origins"].([]any) // a, turn 3
	want := []any{"system+inserted", "dataset:0", "inserted", "dataset:2", "inserted", "dataset:4"}
	if !slices.Equal(got, want) || len(rows[1]["messages"].([]any)) != len(want) {
		t.Errorf("origins %v, want %v", got, want)
	}
	if _, st := write(t, l, export.KindCurated, export.Parquet, "curated.parquet", export.Options{}); st.Rows != 10 {
		t.Errorf("parquet: %+v", st)
	}
}

func TestMetaPathAndFileName(t *testing.T) {
	for out, want := range map[string]string{
		"train.jsonl":         "train.meta.jsonl",
		"dir/train.jsonl.zst": "dir/train.meta.jsonl.zst",
		"train.JSONL.gz":      "train.meta.jsonl.gz",
		"extra-curated.sft":   "extra-curated.sft.meta.jsonl",
		"curated.sft.jsonl":   "curated.sft.meta.jsonl",
		"no-extension":        "no-extension.meta.jsonl",
	} {
		if got := export.MetaPath(out); got != want {
			t.Errorf("MetaPath(%q) = %q, want %q", out, got, want)
		}
	}
	for _, c := range [][3]string{
		{"curated", "sft", "curated.sft.jsonl"},
		{"curated", "parquet", "curated.parquet"},
		{"preferences", "jsonl-zst", "preferences.jsonl.zst"},
		{"winners", "jsonl", "winners.jsonl"},
	} {
		if got := export.FileName(c[0], c[1]); got != c[2] {
			t.Errorf("FileName(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// refOf reads N from an origin "dataset:N".
func refOf(t *testing.T, origin string) int {
	t.Helper()
	n, ok := strings.CutPrefix(origin, "dataset:")
	if !ok {
		t.Fatalf("origin %q is not a dataset message", origin)
	}
	i := 0
	for _, r := range n {
		i = i*10 + int(r-'0')
	}
	return i
}
