package detect_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/io/detect"
	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/pipeline/record"
)

const fixtures = "../../fixtures"

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

type result struct {
	ids  []string
	bad  []string // "line\treason"
	errs error
}

func readAll(t *testing.T, path string, opts detect.Options) (string, result) {
	t.Helper()
	r, format, err := detect.Open(ctx(t), path, opts)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer r.Close()
	var res result
	for {
		rec, err := r.Next(ctx(t))
		if err == io.EOF {
			return format, res
		}
		if err != nil {
			res.errs = err
			return format, res
		}
		if err := jsonl.CheckRecord(rec); err != nil {
			t.Fatal(err)
		}
		if rec.Bad != nil {
			res.bad = append(res.bad, strconv.FormatInt(rec.Bad.Source.Line, 10)+"\t"+string(rec.Bad.Reason))
			continue
		}
		res.ids = append(res.ids, rec.Conv.ID)
	}
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		file   string
		format string
		n      int
		first  string
	}{
		{"formats/wildchat.jsonl", detect.WildChat, 4, ""},
		{"formats/wildchat.jsonl.zst", detect.WildChat, 4, ""},
		{"formats/wildchat.jsonl.gz", detect.WildChat, 4, ""},
		{"formats/openai.jsonl", detect.OpenAI, 3, "oa-1"},
		{"formats/canonical.jsonl", detect.Canonical, 2, "c-1"},
		{"formats/sharegpt.json", detect.ShareGPT, 3, "sg-1"},
		{"formats/sharegpt.jsonl", detect.ShareGPT, 3, "sg-1"},
		{"formats/sharelm.jsonl", detect.ShareLM, 3, "slm-1"},
		{"formats/lic.json", detect.LiC, 4, "sharded-spider-val-701-medium"},
	}
	var plain []string
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			format, res := readAll(t, filepath.Join(fixtures, tt.file), detect.Options{})
			if format != tt.format || res.errs != nil || len(res.bad) > 0 || len(res.ids) != tt.n {
				t.Fatalf("format %s, %d ids, bad %v, err %v", format, len(res.ids), res.bad, res.errs)
			}
			if tt.first != "" && res.ids[0] != tt.first {
				t.Errorf("first id %s, want %s", res.ids[0], tt.first)
			}
			if tt.format == detect.WildChat {
				// Compressed copies must give the same records.
				if plain == nil {
					plain = res.ids
				} else if strings.Join(plain, ",") != strings.Join(res.ids, ",") {
					t.Errorf("ids %v, want %v", res.ids, plain)
				}
			}
		})
	}
}

func TestExplicitFormatOverridesSniffing(t *testing.T) {
	// Read as ShareGPT, the OpenAI fixture has no conversations field.
	format, res := readAll(t, filepath.Join(fixtures, "formats/openai.jsonl"), detect.Options{Format: "sharegpt"})
	if format != detect.ShareGPT || len(res.ids) != 0 || len(res.bad) != 3 || !strings.HasSuffix(res.bad[0], string(record.MissingConversation)) {
		t.Fatalf("format %s, %+v", format, res)
	}
	if _, _, err := detect.Open(ctx(t), filepath.Join(fixtures, "formats/openai.jsonl"), detect.Options{Format: "csv"}); !errors.Is(err, detect.ErrUnknownFormat) {
		t.Fatalf("unknown format name: %v", err)
	}
}

func TestColumnarNeedsAReader(t *testing.T) {
	dir := t.TempDir()
	pq := filepath.Join(dir, "x.bin")
	os.WriteFile(pq, []byte("PAR1\x00\x00"), 0o644)
	arrow := filepath.Join(dir, "x.arrow")
	os.WriteFile(arrow, []byte("ARROW1\x00\x00"), 0o644)
	for _, p := range []string{pq, arrow} {
		_, _, err := detect.Open(ctx(t), p, detect.Options{})
		if err == nil || !strings.Contains(err.Error(), "none was configured") {
			t.Errorf("%s: %v", p, err)
		}
	}
	var called string
	opts := detect.Options{
		OpenParquet: func(path string) (record.Reader, string, error) { called = path; return nil, "wildchat", nil },
		OpenArrow:   func(path string) (record.Reader, error) { called = path; return nil, nil },
	}
	if _, f, err := detect.Open(ctx(t), pq, opts); err != nil || f != "wildchat" || called != pq {
		t.Errorf("parquet: %s %v %s", f, err, called)
	}
	if _, f, err := detect.Open(ctx(t), arrow, opts); err != nil || f != detect.Arrow || called != arrow {
		t.Errorf("arrow: %s %v %s", f, err, called)
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		head, want string
	}{
		{`{"conversation_hash":"x","conversation":[]}`, detect.WildChat},
		{`{"turn":1,"conversation":[]}`, detect.WildChat},
		{"not json\n" + `{"conversation_id":"x","conversation":[]}`, detect.WildChat},
		{"[oops\n" + `{"conversation_id":"x","conversation":[]}` + "\n", detect.WildChat},
		{"[\n  " + `{"conversations": [`, detect.ShareGPT},
		{"not json\nstill not\n", ""},
		{"{broken\n" + `{"conversation_id":"x","conversation":[]}`, detect.WildChat},
		{`{"messages":[]}`, detect.OpenAI},
		{`{"id":"c","source":{},"format":"wildchat","messages":[]}`, detect.Canonical},
		{`{"conversations":[]}`, detect.ShareGPT},
		{`{"shards":[]}`, detect.LiC},
		{"\xef\xbb\xbf  [ {\"conversations\": [", detect.ShareGPT},
		{`[{"task_id":"x","shards":[{"shard_id":1,"sh`, detect.LiC},
		{"", detect.OpenAI},
		{`[{"foo":1}]`, ""},
		{`{"foo":1}`, ""},
		{"PK\x03\x04", ""},
	}
	for _, tt := range tests {
		got, err := detect.Sniff([]byte(tt.head), ".jsonl")
		if tt.want == "" {
			if !errors.Is(err, detect.ErrUnknownFormat) {
				t.Errorf("%q: got %s, %v; want an unknown-format error", tt.head, got, err)
			}
			continue
		}
		if got != tt.want || err != nil {
			t.Errorf("%q: got %s, %v; want %s", tt.head, got, err, tt.want)
		}
	}
}

func TestUnknownContentNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("hello there\n"), 0o644)
	_, _, err := detect.Open(ctx(t), p, detect.Options{})
	if err == nil || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "hello there") {
		t.Fatalf("got %v", err)
	}
}

// TestBadCorpus reads fixtures/bad through detect.Open and checks the exact
// (line, reason) list of expected.tsv, and that the good records survive.
func TestBadCorpus(t *testing.T) {
	f, err := os.Open(filepath.Join(fixtures, "bad/expected.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	var wantIDs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# Good records (ids): "); ok {
			wantIDs = strings.Fields(rest)
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		want = append(want, line)
	}
	format, res := readAll(t, filepath.Join(fixtures, "bad/wildchat_mixed.jsonl"), detect.Options{MaxLineBytes: 4096})
	if format != detect.WildChat || res.errs != nil {
		t.Fatalf("format %s, err %v", format, res.errs)
	}
	if strings.Join(res.bad, "\n") != strings.Join(want, "\n") {
		t.Errorf("quarantined:\n%s\nwant:\n%s", strings.Join(res.bad, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(res.ids, " ") != strings.Join(wantIDs, " ") {
		t.Errorf("good ids %v, want %v", res.ids, wantIDs)
	}
}

func TestDecoder(t *testing.T) {
	for _, f := range []string{detect.WildChat, detect.OpenAI, detect.Canonical, detect.ShareGPT, detect.LiC} {
		if d, ok := detect.Decoder(f); !ok || d == nil {
			t.Errorf("no decoder for %s", f)
		}
	}
	if _, ok := detect.Decoder(detect.Parquet); ok {
		t.Error("parquet has no text decoder")
	}
}

// TestBadFirstLine checks that a first line that is not a record is
// quarantined like any other bad line, with its line number and reason,
// and the records after it are read, whether the format is given or found
// from the lines after it (issue 26: such a file used to be refused whole).
func TestBadFirstLine(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join(fixtures, "wildchat/wildchat-1m-sample10.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_, intact := readAll(t, filepath.Join(fixtures, "wildchat/wildchat-1m-sample10.jsonl"), detect.Options{})
	if len(intact.ids) != 10 || len(intact.bad) != 0 {
		t.Fatalf("the intact sample reads as %d records, bad %v", len(intact.ids), intact.bad)
	}
	tests := []struct {
		name, first string
		format      string // given; "" to sniff
		line        int64  // the quarantined line
		reason      record.Reason
	}{
		{"prose, sniffed", "this is not json", "", 1, record.MalformedJSON},
		{"prose, given", "this is not json", detect.WildChat, 1, record.MalformedJSON},
		{"binary, sniffed", "\x00\x01\x02garbage\xff", "", 1, record.InvalidUTF8},
		{"a broken array opener, sniffed", "[oops", "", 1, record.MalformedJSON},
		{"a broken array opener, given", "[oops", detect.WildChat, 1, record.MalformedJSON},
		{"a record cut short, sniffed", `[{"conversation_hash":"x","conv`, "", 1, record.TruncatedLine},
		{"a JSON array, sniffed", `[1, 2, 3]`, "", 1, record.BadField},
		{"a JSON string, sniffed", `"hello"`, "", 1, record.BadField},
		{"a broken object, sniffed", `{"conversation_hash": "x", `, "", 1, record.TruncatedLine},
		{"after a byte order mark and blank lines", "\xef\xbb\xbf\n\n# a comment", "", 3, record.MalformedJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chats.jsonl")
			if err := os.WriteFile(path, append([]byte(tt.first+"\n"), sample...), 0o644); err != nil {
				t.Fatal(err)
			}
			format, res := readAll(t, path, detect.Options{Format: tt.format})
			if format != detect.WildChat || res.errs != nil {
				t.Fatalf("format %q, error %v", format, res.errs)
			}
			want := strconv.FormatInt(tt.line, 10) + "\t" + string(tt.reason)
			if len(res.bad) != 1 || res.bad[0] != want {
				t.Errorf("quarantined %q, want [%q]", res.bad, want)
			}
			if strings.Join(res.ids, " ") != strings.Join(intact.ids, " ") {
				t.Errorf("records %v, want %v", res.ids, intact.ids)
			}
			// The parallel path (detect.OpenText) splits the same way.
			tx, err := detect.OpenText(ctx(t), path, detect.Options{Format: tt.format})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			var n int
			for {
				ch, err := tx.Chunks.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				n++
				rec := jsonl.DecodeChunk(ch, tx.File, tx.Decode)
				if (rec.Bad != nil) != (ch.Line == tt.line) {
					t.Errorf("OpenText: line %d quarantined %v", ch.Line, rec.Bad != nil)
				}
			}
			if tx.Chunks.Array || n != 11 || tx.Format != detect.WildChat {
				t.Errorf("OpenText: array %v, %d chunks, format %s; want lines, 11, wildchat", tx.Chunks.Array, n, tx.Format)
			}
		})
	}
}
