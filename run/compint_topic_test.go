package run_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/run/config"
	"github.com/ac3/ac3/stages/compint/compinttest"
)

// TestCompIntTopicStitching runs CompInt with the embedder role bound:
// the contexts are stitched by topic from the conversations' embeddings
// (sent to /v1/embeddings of the test server), and a second run on the
// same run file sends no embeddings request. Without the role the run
// says it stitches sequentially.
func TestCompIntTopicStitching(t *testing.T) {
	dir := t.TempDir()
	fixtures, _ := filepath.Abs("../fixtures")
	scs := filepath.Join(dir, "scs.json")
	if err := os.WriteFile(scs, []byte(compinttest.TwoSCs), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, llmtest.Options{EmbedDim: 128})
	srv.Add(llmtest.Rule{Name: "model", Func: compinttest.Model(mustTwoSCs(t))})
	base := `run: {db: ` + dir + `/%DB%.db, out: ` + dir + `/%DB%/, seed: 7}
input: {files: [` + fixtures + `/wildchat/wildchat-1m-sample10.jsonl]}
endpoints:
  test: {base_url: "` + srv.URL + `"}
models:
  chat: {endpoint: test, name: m}
  emb: {endpoint: test, name: emb-model, price: {input: 1}}
roles:
  judge: {model: chat}
  respondent: {model: chat}
%EMB%
stages:
  compint: {scs: ` + scs + `, target_tokens: 3000, max_contexts: 2, locations: [top], framings: [explicit]}
  curate: {on: [compint], last_turns: 1, strategies: [fc, lt]}
`
	// planFor writes the config of run db with emb as its embedder line.
	planFor := func(db, emb string) (run.Plan, []string) {
		t.Helper()
		path := filepath.Join(dir, db+".yaml")
		if err := os.WriteFile(path, []byte(strings.NewReplacer("%DB%", db, "%EMB%", emb).Replace(base)), 0o644); err != nil {
			t.Fatal(err)
		}
		getenv := func(string) string { return "" }
		cfg, err := config.Load(path, getenv)
		if err != nil {
			t.Fatal(err)
		}
		plan, notes, err := cfg.Plan(getenv)
		if err != nil {
			t.Fatal(err)
		}
		return plan, notes
	}
	runOnce := func(db, emb string) (string, int) {
		t.Helper()
		plan, _ := planFor(db, emb)
		before := 0
		for _, c := range srv.Calls() {
			if c.Path == "/v1/embeddings" {
				before++
			}
		}
		var log bytes.Buffer
		res, err := run.Execute(ctx(t), plan, run.Options{Log: &log})
		if err != nil || res.Stopped || len(res.FailedTasks()) != 0 {
			t.Fatalf("err %v, result %+v\n%s", err, res, log.String())
		}
		n := 0
		for _, c := range srv.Calls() {
			if c.Path == "/v1/embeddings" {
				n++
			}
		}
		return log.String(), n - before
	}
	// The dry run says which stitching the run will use.
	for emb, want := range map[string]string{"  embedder: {model: emb}": "compint: topic stitching", "": "compint: sequential stitching"} {
		plan, notes := planFor("dry", emb)
		var out bytes.Buffer
		if err := run.DryRun(ctx(t), &out, plan, notes, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Fatalf("dry run without %q:\n%s", want, out.String())
		}
	}
	// The forecast counts the embedding requests the run then sends, and
	// prices their tokens ($1 per million here).
	var embRow run.StageForecast
	{
		plan, _ := planFor("fc", "  embedder: {model: emb, inputs: 4}")
		fc, err := run.Estimate(ctx(t), plan)
		if err != nil {
			t.Fatal(err)
		}
		for _, sf := range fc.Stages {
			if sf.Stage == "compint-embed" {
				embRow = sf
			}
		}
		if embRow.PendingTasks == 0 || embRow.InputTokens == 0 || embRow.CostUSD != float64(embRow.InputTokens)/1e6 {
			t.Fatalf("embedding row %+v", embRow)
		}
		// embed_pool caps the conversations embedded (and held).
		plan.CompInt.EmbedPool = 4
		fc, err = run.Estimate(ctx(t), plan)
		if err != nil {
			t.Fatal(err)
		}
		for _, sf := range fc.Stages {
			if sf.Stage == "compint-embed" && (sf.PendingTasks != 4 || sf.Calls != 1) {
				t.Errorf("with embed_pool 4: %+v", sf)
			}
		}
	}
	log, n := runOnce("topic", "  embedder: {model: emb, inputs: 4}")
	if !strings.Contains(log, "topic stitching") || n == 0 {
		t.Fatalf("%d embeddings requests; log:\n%s", n, log)
	}
	if int64(n) != embRow.Calls {
		t.Errorf("the forecast counted %d embedding requests, the run sent %d", embRow.Calls, n)
	}
	if !strings.Contains(log, "compint: 8 instances") {
		t.Fatalf("log:\n%s", log)
	}
	if log, n = runOnce("topic", "  embedder: {model: emb, inputs: 4}"); n != 0 {
		t.Fatalf("the second run sent %d embeddings requests; log:\n%s", n, log)
	}
	// In batch mode the embeddings go to one batch round of /v1/embeddings
	// lines (the test server's batches end a second after they start),
	// then stitching goes on from the cache.
	log, n = runOnce("batch", "  embedder: {model: emb, inputs: 4, mode: batch}")
	if n != 3 || !strings.Contains(log, "wait for a batch") || !strings.Contains(log, "compint: 8 instances") {
		t.Fatalf("%d embeddings lines; log:\n%s", n, log)
	}
	lines := 0
	for _, c := range srv.Calls() {
		if c.Path == "/v1/embeddings" && c.Batch != "" {
			lines++
		}
	}
	if lines != 3 {
		t.Fatalf("%d embeddings requests came as batch lines, want all 3", lines)
	}
	log, n = runOnce("seq", "")
	if n != 0 || !strings.Contains(log, "sequential stitching") {
		t.Fatalf("%d embeddings requests; log:\n%s", n, log)
	}
}
