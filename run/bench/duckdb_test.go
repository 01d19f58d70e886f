//go:build unix

package bench_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// duckEnv names a folder with DuckDB's Node bindings
// (scripts/duckdb/install.sh DIR); BenchmarkConvertDuckDB is skipped
// without it.
const duckEnv = "AC3_DUCKDB_DIR"

// duckConversations is the size of issue 28's file: the first 40k records
// of the seeded stream are 537 MB of JSONL (the was 541 MB).
const duckConversations = 40_000

// Issue 28's target: ac3 convert takes at most 0.40× DuckDB's wall time.
const maxDuckRatio = 0.40

// duckCopy converts JSONL to Parquet with DuckDB's COPY and prints the rows
// written. It is run with node from a temporary folder, so the bindings are
// resolved from the folder the argument names.
const duckCopy = `import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
const [dir, src, dst] = process.argv.slice(2);
const { DuckDBInstance } = await import(pathToFileURL(createRequire(dir + '/').resolve('@duckdb/node-api')).href);
const con = await (await DuckDBInstance.create(':memory:')).connect();
const q = s => "'" + s.replaceAll("'", "''") + "'";
await con.run('COPY (SELECT * FROM read_json_auto(' + q(src) + ')) TO ' + q(dst) + ' (FORMAT parquet)');
const n = (await con.runAndReadAll('SELECT count(*)::INTEGER AS n FROM read_parquet(' + q(dst) + ')')).getRowObjects()[0].n;
console.log(JSON.stringify({ rows: n }));
`

// BenchmarkConvertDuckDB is issue 28's comparison: `ac3 convert` of 537 MB
// of WildChat-shaped JSONL (uncompressed, on disk) to Parquet, with the
// default memory governor and with --memory-limit off, against DuckDB's
// `COPY (SELECT * FROM read_json_auto(…)) TO … (FORMAT parquet)` through its
// Node bindings, each in its own process, in alternating rounds. It prints
// wall time, CPU time and peak RSS (medians of the rounds), ac3's wall time
// over DuckDB's (the median of the rounds' ratios; target ≤ 0.40) and the
// governor's cost (governed over off).
func BenchmarkConvertDuckDB(b *testing.B) {
	dir := os.Getenv(duckEnv)
	if dir == "" {
		b.Skipf("%s not set (see scripts/duckdb/install.sh)", duckEnv)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		b.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("no node on PATH")
	}
	files, err := generatedSizes([]int{duckConversations})
	if err != nil {
		b.Fatal(err)
	}
	tmp := b.TempDir()
	in := filepath.Join(tmp, "in.jsonl")
	if err := unzstd(files[duckConversations].Path, in); err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(tmp, "copy.mjs")
	if err := os.WriteFile(script, []byte(duckCopy), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := ac3Binary(b)
	launcher := launcherBinary(b)
	out := filepath.Join(tmp, "out.parquet")
	jobs := []struct {
		name string
		cmd  func() *exec.Cmd
		want string
	}{
		{"ac3 convert", func() *exec.Cmd { return exec.Command(bin, "convert", "--out", out, in) }, fmt.Sprintf("wrote %d conversations", duckConversations)},
		{"DuckDB COPY", func() *exec.Cmd { return exec.Command(node, script, dir, in, out) }, fmt.Sprintf(`{"rows":%d}`, duckConversations)},
		{"ac3 convert --memory-limit off", func() *exec.Cmd { return exec.Command(bin, "--memory-limit", "off", "convert", "--out", out, in) }, fmt.Sprintf("wrote %d conversations", duckConversations)},
	}
	const rounds = 5
	figs := make([][]scaleFigure, len(jobs))
	var ratios, govWall, govCPU []float64
	for range rounds {
		for k, j := range jobs {
			os.Remove(out)
			r, err := launchJob(launcher, j.cmd())
			if err != nil {
				b.Fatalf("%s: %v", j.name, err)
			}
			if !strings.Contains(string(r.out), j.want) {
				b.Fatalf("%s said %q, want %q", j.name, r.out, j.want)
			}
			figs[k] = append(figs[k], scaleFigure{rss: r.rss, wall: r.wall, cpu: r.cpu})
		}
		n := len(figs[0]) - 1
		ratios = append(ratios, figs[0][n].wall.Seconds()/figs[1][n].wall.Seconds())
		govWall = append(govWall, figs[0][n].wall.Seconds()/figs[2][n].wall.Seconds())
		govCPU = append(govCPU, figs[0][n].cpu.Seconds()/figs[2][n].cpu.Seconds())
	}
	slices.Sort(ratios)
	ratio := ratios[len(ratios)/2]
	b.ReportMetric(ratio, "x-duckdb-wall")
	st, _ := os.Stat(in)
	fmt.Printf("\nJSONL → Parquet, %d conversations, %.0f MB of JSONL; medians of %d alternating rounds, each in its own process\n", duckConversations, float64(st.Size())/1e6, rounds)
	for k, j := range jobs {
		m := medianFigure(figs[k])
		fmt.Printf("  %-32s %6.2f s wall  %6.2f CPU-s  %5.0f MB peak RSS\n", j.name, m.wall.Seconds(), m.cpu.Seconds(), float64(m.rss)/mb)
	}
	fmt.Printf("  ac3 convert / DuckDB wall time: %.2f× (rounds: %s; target ≤ %.2f×)\n", ratio, fmtRatios(ratios), maxDuckRatio)
	fmt.Printf("  ac3 convert governed / --memory-limit off: %.2f× wall, %.2f× CPU (medians of the rounds' ratios)\n", medianOf(govWall), medianOf(govCPU))
	if ratio > maxDuckRatio {
		b.Errorf("ac3 convert took %.2f× DuckDB's wall time, want ≤ %.2f×", ratio, maxDuckRatio)
	}
}

func fmtRatios(rs []float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%.2f", r))
	}
	return strings.Join(s, ", ")
}

// unzstd writes the decompressed contents of the zstd file from to to.
func unzstd(from, to string) error {
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return err
	}
	defer zr.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	if _, err := io.Copy(w, zr); err != nil {
		out.Close()
		return fmt.Errorf("decompressing %s: %w", from, err)
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
