package pipeline_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The layers, bottom to top (doc.go draws them). A package may import only
// packages in its own layer or below; the table says exactly which.
var (
	domain = []string{"pipeline/conv"}
	leaves = []string{"pipeline/conv", "pipeline/stats", "pipeline/llm/parse", "migrations", "io/atomicfile", "io/compress"}
	model  = []string{"pipeline/conv", "pipeline/llm", "pipeline/llm/parse", "pipeline/prompt"}
	// engine is what a stage may build on: the domain, the run file, the
	// model client, prompts, tokens, statistics and the engine's own types.
	engine = []string{"pipeline", "pipeline/conv", "pipeline/ledger", "pipeline/llm", "pipeline/llm/parse", "pipeline/prompt", "pipeline/stats", "pipeline/tokens"}
	// stages is every stage package.
	stages = []string{"stages/analyze", "stages/annotator", "stages/classify", "stages/compint", "stages/compint/agreement", "stages/compint/measure", "stages/constraints", "stages/curate", "stages/curate/curated", "stages/curate/inspect", "stages/curate/memory", "stages/curate/policy", "stages/curate/tally", "stages/filter", "stages/lic/grade", "stages/lic/replay", "stages/lic/simulate", "stages/pollution", "stages/respond"}
	// readers and writers of every format.
	formats = []string{"io/arrowipc", "io/atomicfile", "io/compress", "io/detect", "io/jsonl", "io/lic", "io/openaichat", "io/parquetio", "pipeline/record", "io/sharegpt", "io/sharelm", "io/wildchat"}
)

func with(groups ...any) []string {
	var out []string
	for _, g := range groups {
		switch g := g.(type) {
		case string:
			out = append(out, g)
		case []string:
			out = append(out, g...)
		}
	}
	return out
}

// allowed lists, for every package of the module, the packages of the module
// it may import. A new package needs a row; an import not listed fails the
// test. Test files are not checked: a test may reach any layer below and the
// test helpers (llmtest, prompttest, analyzetest, annotatortest).
var allowed = map[string][]string{
	// Leaves: the standard library and third-party code only.
	"pipeline/conv":        {},
	"pipeline/stats":       {},
	"pipeline/llm/parse":   {},
	"pipeline/progress":    {},
	"pipeline/synth":       {},
	"pipeline/shard":       {},
	"pipeline/spell":       {},
	"pipeline/cells":       {},
	"pipeline/memgov":      {},
	"migrations":           {},
	"io/atomicfile":        {},
	"io/compress":          {},
	"pipeline/llm/llmtest": {},
	// compinttest scripts a model for CompInt tests (tests only).
	"stages/compint/compinttest": {"pipeline/conv", "pipeline/llm/llmtest", "stages/compint"},
	"run/bench":                  {},
	// rsslaunch starts a command for TestMemoryFlat (standard library only).
	"run/bench/internal/rsslaunch": {},

	// Domain services: the model client, prompts, tokens, records, the run file.
	"pipeline/llm":               with(domain, "pipeline/llm/parse"),
	"pipeline/prompt":            domain,
	"pipeline/prompt/prompttest": domain,
	"pipeline/tokens":            domain,
	"pipeline/record":            domain,
	"pipeline/ledger":            with(domain, "pipeline/record", "pipeline/llm", "migrations", "pipeline/ledger/pagesum"),
	// pagesum is the run file's page-checksum VFS (C, on SQLite).
	"pipeline/ledger/pagesum": {},
	// batch drives an endpoint's batch API for the requests a run queued.
	"pipeline/llm/batch": with(domain, "pipeline/llm", "pipeline/ledger"),

	// Readers and writers, one package per format.
	"io/jsonl":      with(domain, "pipeline/record", "io/atomicfile", "io/compress"),
	"io/wildchat":   with(domain, "pipeline/record", "io/jsonl"),
	"io/sharegpt":   with(domain, "pipeline/record", "io/jsonl"),
	"io/sharelm":    with(domain, "pipeline/record", "io/jsonl"),
	"io/openaichat": with(domain, "pipeline/record", "io/jsonl"),
	"io/lic":        with(domain, "pipeline/record", "io/jsonl"),
	"io/parquetio":  with(domain, "pipeline/record", "io/atomicfile"),
	"io/arrowipc":   with(domain, "pipeline/record", "io/atomicfile", "io/parquetio"),
	"io/detect":     with("pipeline/record", "io/compress", "io/jsonl", "io/lic", "io/openaichat", "io/sharegpt", "io/sharelm", "io/wildchat"),
	// The engine sizes a model stage's window from the client's limits.
	"pipeline":        with(domain, "pipeline/ledger", "pipeline/llm"),
	"pipeline/ingest": with(domain, "pipeline/record", "pipeline/ledger"),
	// convert streams files to files without a run: readers, filters (by
	// callback) and writers.
	"run/convert": with(domain, "pipeline/record", "io/detect", "io/jsonl", "io/parquetio", "io/arrowipc", "io/compress", "pipeline/ingest"),

	// Stages: never a reader, a writer, the judge, a report or the CLI.
	"stages/filter":                  domain,
	"stages/analyze":                 model,
	"stages/analyze/analyzetest":     {"pipeline/llm", "pipeline/llm/llmtest", "pipeline/llm/parse"},
	"stages/annotator":               with(engine),
	"stages/annotator/annotatortest": with(domain, "pipeline", "pipeline/ledger", "pipeline/llm", "pipeline/llm/llmtest", "pipeline/llm/parse"),
	"stages/classify":                with(engine, "stages/annotator"),
	"stages/constraints":             with(engine, "stages/annotator", "stages/classify"),
	// pollution also reviews the replies respond generated.
	"stages/pollution": with(engine, "stages/annotator", "stages/respond"),
	// compint builds CompInt instances and their probes; lic/grade grades
	// Lost-in-Conversation answers (its SQL runs in SQLite of its own).
	"stages/compint": with(engine),
	// measure scores CompInt instances from the contexts curate built.
	"stages/compint/measure": with(engine, "stages/compint", "stages/curate", "stages/curate/curated"),
	// agreement measures the retention judge against people's labels.
	"stages/compint/agreement": with(engine, "stages/compint"),
	"stages/lic/grade":         {"pipeline/llm/parse"},
	// lic/simulate plays the baseline trajectories out and grades them;
	// lic/replay grades what respond regenerated on them.
	"stages/lic/simulate": with(engine, "stages/lic/grade"),
	// replay's memory arm (lic.memory) curates, answers and learns one
	// instance at a time, so it drives analyze and curate itself.
	"stages/lic/replay": with(engine, "stages/lic/grade", "stages/lic/simulate", "stages/respond", "stages/analyze", "stages/curate", "stages/curate/curated", "stages/curate/memory"),
	"stages/curate":     with(engine, "stages/analyze", "stages/curate/curated", "stages/curate/memory", "stages/curate/policy"),
	// Below curate: what a curated context is (curated), the AC3 memory
	// and the adaptive policy; beside it, what reads stored contexts for
	// the report (tally) and for 'ac3 inspect'. None imports curate.
	"stages/curate/curated": with(domain, "pipeline/tokens", "stages/analyze"),
	"stages/curate/memory":  with(engine, "stages/analyze"),
	"stages/curate/policy":  with(engine),
	"stages/curate/tally":   {"stages/curate/curated"},
	"stages/curate/inspect": with(domain, "stages/curate/curated", "pipeline/cells"),
	"stages/respond":        with(engine, "stages/curate", "stages/curate/curated"),

	// The judge compares what respond produced.
	"judge": with(engine, "stages/respond"),

	// The model stages' throughput benchmark (tests only) drives them all.
	"run/bench/modelstages": with(engine, stages, "judge"),

	// Reports and exports sit above everything they summarise.
	"run/report": with(engine, stages, "judge", "io/atomicfile", "pipeline/cells"),
	"run/export": with(engine, stages, "judge", "io/jsonl", "io/parquetio"),

	// The run library wires everything below into one call; the config
	// file is read into its plan by a package of its own.
	"run":        with(engine, stages, formats, "judge", "run/report", "run/export", "run/convert", "pipeline/ingest", "pipeline/progress", "pipeline/llm/batch", "pipeline/shard"),
	"run/config": with(engine, stages, "judge", "run/report", "run", "pipeline/spell"),
	// view serves a run to a browser: it reads across the stages, through
	// their decoders and the run's status.
	"run/view": with(engine, stages, "judge", "run"),

	// The command line: flags, calls into the run library, printing. It
	// reads the domain packages only for their names and lists (strategies,
	// formats, dimensions) and for the read-only commands (status,
	// inspect, memory show).
	"cmd/ac3": with(engine, stages, "io/detect", "pipeline/record", "judge", "run/report", "run/export", "run/convert", "run", "run/config", "run/view", "pipeline/shard", "pipeline/memgov", "pipeline/spell"),
}

// external lists the third-party modules and who may import them, so heavy
// or layer-specific dependencies (Arrow, SQLite, the CLI framework) stay
// where they belong. Modules not listed may be imported anywhere.
var external = map[string][]string{
	"github.com/apache/arrow/go/v17":       {"io/parquetio", "io/arrowipc", "run/export"},
	"github.com/apache/thrift":             {"io/parquetio"},
	"github.com/mattn/go-sqlite3":          {"pipeline/ledger", "pipeline/ledger/pagesum", "stages/lic/grade"},
	"github.com/openai/openai-go/v3":       {"pipeline/llm"},
	"github.com/urfave/cli/v2":             {"cmd/ac3"},
	"gopkg.in/yaml.v3":                     {"run/config"},
	"github.com/pkoukk/tiktoken-go":        {"pipeline/tokens"},
	"github.com/klauspost/compress":        {"io/compress", "io/parquetio", "pipeline/ledger", "pipeline/tokens"},
	"golang.org/x/term":                    {"pipeline/progress", "cmd/ac3"},
	"github.com/sourcegraph/conc":          {"pipeline", "io/parquetio", "run/convert", "judge", "stages/respond", "stages/curate", "stages/compint/agreement"},
	"github.com/pkoukk/tiktoken-go-loader": {"pipeline/tokens"},
	"github.com/dgryski/go-minhash":        {"stages/filter"},
	"github.com/abadojack/whatlanggo":      {"stages/filter"},
}

// TestDependencyTable checks every import of every package of the module
// against the tables above.
func TestDependencyTable(t *testing.T) {
	const mod = "github.com/ac3/ac3/"
	pkgs, err := listPackages()
	if err != nil {
		t.Fatalf("listing the module's packages: %v", err)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		rel, inside := strings.CutPrefix(p.ImportPath, mod)
		if !inside {
			continue // the module's root: doc.go, the map of the layers
		}
		seen[rel] = true
		ok, known := allowed[rel]
		if !known {
			t.Errorf("%s has no row in the dependency table (pipeline/deps_test.go): add one listing what it may import", rel)
			continue
		}
		for _, imp := range p.Imports {
			if irel, ours := strings.CutPrefix(imp, mod); ours {
				if !slices.Contains(ok, irel) {
					t.Errorf("%s imports %s, which its row in the dependency table does not allow", rel, irel)
				}
				continue
			}
			for module, who := range external {
				if (imp == module || strings.HasPrefix(imp, module+"/")) && !slices.Contains(who, rel) {
					t.Errorf("%s imports %s; only %s may", rel, imp, strings.Join(who, ", "))
				}
			}
		}
	}
	var stale []string
	for rel := range allowed {
		if !seen[rel] {
			stale = append(stale, rel)
		}
	}
	sort.Strings(stale)
	for _, rel := range stale {
		t.Errorf("the dependency table has a row for %s, which is not a package any more", rel)
	}
}

type goPackage struct {
	ImportPath string
	Imports    []string
}

func listPackages() ([]goPackage, error) {
	cmd := exec.Command("go", "list", "-json", "github.com/ac3/ac3/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var pkgs []goPackage
	dec := json.NewDecoder(out)
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, cmd.Wait()
}
