package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ac3/ac3/run/export"
)

// prefRow is the part of a preference row these tests look at.
type prefRow struct {
	conv     string
	turn     int
	pair     string
	chosen   string
	rejected string
	prompt   string // the prompt's messages, as JSON
	same     bool
}

func prefRows(t *testing.T, path string) []prefRow {
	t.Helper()
	var out []prefRow
	for _, m := range readLines(t, path) {
		p, _ := json.Marshal(m["prompt"])
		out = append(out, prefRow{
			conv: m["conversation_id"].(string), turn: int(m["turn"].(float64)), pair: m["pair"].(string),
			chosen:   m["chosen"].([]any)[0].(map[string]any)["content"].(string),
			rejected: m["rejected"].([]any)[0].(map[string]any)["content"].(string),
			prompt:   string(p), same: m["same_prompt"].(bool),
		})
	}
	return out
}

func (r prefRow) String() string {
	return fmt.Sprintf("%s/%d %s %q>%q same=%v", r.conv, r.turn, r.pair, r.chosen, r.rejected, r.same)
}

// TestPreferencesLeaveOutDuplicates exports the judged run: the rows of b's
// turn 2 equal a's (b began as a did, and the cached answers are the same),
// across conversations, and are left out and counted; every other row is
// kept, each once, whatever dimension or prompt is chosen.
func TestPreferencesLeaveOutDuplicates(t *testing.T) {
	l := judgedRun(t)
	path, st := write(t, l, export.KindPreferences, export.JSONL, "dpo.jsonl", export.Options{})
	rows := prefRows(t, path)
	var got []string
	for _, r := range rows {
		got = append(got, r.String())
	}
	want := []string{
		`a/2 ao@x:fc@x "x: 17">"x from ao: 19" same=false`,
		`a/2 fc@x:fc@y "x: 17">"y: 11" same=true`,
		`a/3 ao@x:fc@x "x from ao: 2.">"x: 2" same=false`,
		`a/3 fc@x:fc@y "x: 2">"y: 4" same=true`,
		`b/3 ao@x:fc@x "x: no">"x from ao: no." same=false`,
		`b/3 fc@x:fc@y "x: no">"y: yes" same=true`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st.Rows != 6 || !maps.Equal(st.Skipped, map[string]int64{export.SkippedDuplicate: 2}) {
		t.Errorf("stats %+v, want 6 rows and 2 duplicates", st)
	}
	if s := st.Summary("preferences", "dpo.jsonl"); s != "wrote 6 preferences rows to dpo.jsonl; left out 2: 2 exact duplicate of an earlier row" {
		t.Errorf("summary %q", s)
	}
	// The prompt is the chosen answer's context: fc's, but ao's where ao
	// won (a, turn 3).
	for _, r := range rows {
		ao := strings.Contains(r.prompt, "[earlier reply omitted]")
		if ao != (r.chosen == "x from ao: 2.") {
			t.Errorf("%s: prompt %s", r, r.prompt)
		}
	}

	// Every dimension: on_topic's verdicts are ties and counted so.
	_, st = write(t, l, export.KindPreferences, export.JSONL, "all.jsonl", export.Options{Preferences: export.PreferenceOptions{Dimension: export.AllDimensions}})
	if st.Rows != 6 || !maps.Equal(st.Skipped, map[string]int64{export.SkippedDuplicate: 2, export.SkippedTie: 8}) {
		t.Errorf("dimension all: stats %+v", st)
	}

	// The same rows in Parquet.
	_, st = write(t, l, export.KindPreferences, export.Parquet, "dpo.parquet", export.Options{})
	if st.Rows != 6 {
		t.Errorf("parquet: %d rows", st.Rows)
	}

	// ao's context as every prompt: no answer but ao@x's was generated from
	// it, so no row has both answers from its prompt.
	path, st = write(t, l, export.KindPreferences, export.JSONL, "ao.jsonl", export.Options{Preferences: export.PreferenceOptions{PromptStrategy: "ao"}})
	for _, r := range prefRows(t, path) {
		if r.same || !strings.Contains(r.prompt, "[earlier reply omitted]") {
			t.Errorf("--prompt-strategy ao: %s, prompt %s", r, r.prompt)
		}
	}
	if st.Rows != 6 || st.Skipped[export.SkippedDuplicate] != 2 {
		t.Errorf("--prompt-strategy ao: stats %+v", st)
	}
}

// TestPreferencesSamePrompt keeps only the verdicts whose two answers were
// generated from the same context (fc@x against fc@y), with that context
// as the prompt; the others are counted as such.
func TestPreferencesSamePrompt(t *testing.T) {
	l := judgedRun(t)
	opts := export.Options{Preferences: export.PreferenceOptions{Pairs: export.PairsSamePrompt}}
	path, st := write(t, l, export.KindPreferences, export.JSONL, "same.jsonl", opts)
	var got []string
	for _, r := range prefRows(t, path) {
		got = append(got, r.String())
		if strings.Contains(r.prompt, "[earlier reply omitted]") {
			t.Errorf("%s: prompt is ao's", r)
		}
	}
	want := []string{
		`a/2 fc@x:fc@y "x: 17">"y: 11" same=true`,
		`a/3 fc@x:fc@y "x: 2">"y: 4" same=true`,
		`b/3 fc@x:fc@y "x: no">"y: yes" same=true`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if wantSkips := map[string]int64{export.SkippedDifferentPrompts: 4, export.SkippedDuplicate: 1}; st.Rows != 3 || !maps.Equal(st.Skipped, wantSkips) {
		t.Errorf("stats %+v, want 3 rows, skipped %v", st, wantSkips)
	}
	for _, bad := range []export.Options{
		{Preferences: export.PreferenceOptions{Pairs: export.PairsSamePrompt, PromptStrategy: "fc"}},
		{Preferences: export.PreferenceOptions{Pairs: "some"}},
	} {
		if _, err := export.Write(context.Background(), l, export.KindPreferences, export.JSONL, filepath.Join(t.TempDir(), "x.jsonl"), bad); err == nil {
			t.Errorf("%+v accepted", bad.Preferences)
		}
	}
	if _, err := export.Write(context.Background(), l, export.KindWinners, export.JSONL, filepath.Join(t.TempDir(), "x.jsonl"), opts); err == nil {
		t.Error("--pairs same-prompt accepted for winners")
	}
}

// TestWinnersLeaveOutDuplicates: each winning answer once per turn, with
// the strategies it beat as a list, and b's turn 2 (a's row again) left
// out.
func TestWinnersLeaveOutDuplicates(t *testing.T) {
	l := judgedRun(t)
	path, st := write(t, l, export.KindWinners, export.JSONL, "sft.jsonl", export.Options{})
	var got []string
	for _, m := range readLines(t, path) {
		msgs := m["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)["content"]
		got = append(got, fmt.Sprintf("%s/%v %s %q beat %v", m["conversation_id"], m["turn"], m["strategy"], last, m["beat"]))
	}
	want := []string{
		`a/2 fc@x "x: 17" beat [ao@x fc@y]`,
		`a/3 ao@x "x from ao: 2." beat [fc@x]`,
		`a/3 fc@x "x: 2" beat [fc@y]`,
		`b/3 fc@x "x: no" beat [ao@x fc@y]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st.Rows != 4 || !reflect.DeepEqual(st.Skipped, map[string]int64{export.SkippedDuplicate: 1}) {
		t.Errorf("stats %+v", st)
	}
}
