//go:build unix

package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/ac3/ac3/io/wildchat"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ingest"
	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/record"
	"github.com/ac3/ac3/stages/filter"
)

// nearEnv lists the sizes BenchmarkNearDedupe runs (comma-separated
// conversation counts); by default 100k and a million.
const nearEnv = "AC3_BENCH_NEAR"

// The near-dedupe child's settings, passed in its environment.
const (
	nearN    = "AC3_BENCH_NEAR_N"
	nearMode = "AC3_BENCH_NEAR_MODE" // near, or exact for the baseline
)

// nearRate is the share of records injected as near copies of an earlier
// record: one in ten, about the rate of resubmitted prompts people report
// in WildChat-like logs.
const nearRate = 10

// nearKinds are the edits an injected copy makes to its source's user
// turns, chosen per copy from its index: the same turns (the prompt sent
// again), one word in fifty changed (a small edit), one word in six
// changed (a rewrite, mostly below the threshold). Every copy gets the
// answers of its own record, so none is an exact duplicate.
var nearKinds = []struct {
	name  string
	every int // one word in every changed; 0: none
}{{"resent", 0}, {"small edit", 50}, {"rewrite", 6}}

// mix is splitmix64: the per-record decisions of the stream are a pure
// function of the record's index, so the scoring pass can recompute them.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// injected reports whether record i is a near copy, and of which earlier
// original record and with which kind of edit.
func injected(i int) (src, kind int, ok bool) {
	if i == 0 || mix(uint64(i))%100 >= nearRate {
		return 0, 0, false
	}
	src = int(mix(uint64(i)^0x5eed) % uint64(i))
	for src > 0 {
		if _, _, copied := injected(src); !copied {
			break
		}
		src--
	}
	return src, int(mix(uint64(i)^0xc0de) % uint64(len(nearKinds))), true
}

// nearStream is the benchmark's input: the seeded WildChat-like generator
// re-seeded per record (so any record can be made again on its own), with
// near copies injected. It reads no file, so the figures are the ingest's,
// not the disk's; the time spent generating and decoding is counted apart.
type nearStream struct {
	g    *gen
	pcg  *rand.PCG
	n, i int
	line []byte
	gen  time.Duration
}

func newNearStream(n int) *nearStream {
	g := newGen(genSeed)
	pcg := rand.NewPCG(0, 0)
	g.r = rand.New(pcg)
	g.zipf = rand.NewZipf(g.r, 1.1, 2, uint64(len(g.vocab)-1))
	return &nearStream{g: g, pcg: pcg, n: n}
}

// original is record i as the generator makes it.
func (s *nearStream) original(i int) *conv.Conversation {
	s.pcg.Seed(genSeed, uint64(i))
	s.line = s.g.conversation(s.line[:0], i)
	rec := wildchat.Decode(s.line, conv.Source{File: "stream", Line: int64(i + 1)})
	return rec.Conv
}

// record is record i of the stream: the original, or a near copy of an
// earlier one with record i's own id, answers and fields.
func (s *nearStream) record(i int) *conv.Conversation {
	c := s.original(i)
	src, kind, ok := injected(i)
	if c == nil || !ok {
		return c
	}
	from := s.original(src)
	if from == nil {
		return c
	}
	var answers []string
	for _, m := range c.Messages {
		if m.Role == conv.Assistant {
			answers = append(answers, m.Content)
		}
	}
	edit := rand.New(rand.NewPCG(uint64(i), 0xed17))
	var msgs []conv.Message
	for _, m := range from.Messages {
		if m.Role != conv.User {
			continue
		}
		text := m.Content
		if every := nearKinds[kind].every; every > 0 {
			words := strings.Fields(text)
			for range max(1, len(words)/every) {
				words[edit.IntN(len(words))] = s.g.vocab[edit.IntN(len(s.g.vocab))]
			}
			text = strings.Join(words, " ")
		}
		msgs = append(msgs, conv.Message{Role: conv.User, Content: text})
		a := "…"
		if len(answers) > 0 {
			a, answers = answers[0], answers[1:]
		}
		msgs = append(msgs, conv.Message{Role: conv.Assistant, Content: a})
	}
	c.Messages = msgs
	return c
}

func (s *nearStream) Next(ctx context.Context) (record.Record, error) {
	if s.i >= s.n {
		return record.Record{}, io.EOF
	}
	t0 := time.Now()
	c := s.record(s.i)
	s.i++
	s.gen += time.Since(t0)
	if c == nil {
		return record.Record{}, fmt.Errorf("record %d did not decode", s.i-1)
	}
	return record.Record{Conv: c}, nil
}

func (s *nearStream) Close() error { return nil }

// cpuSeconds is the CPU time this process has used: on a shared machine
// the wall time says as much about the neighbours as about the ingest.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// indexOf is the record index in a generated conversation id (the second
// half of conversation_hash).
func indexOf(id string) (int, bool) {
	if len(id) != 32 {
		return 0, false
	}
	v, err := strconv.ParseUint(id[16:], 16, 64)
	return int(v), err == nil
}

// nearResult is what a near-dedupe child reports.
type nearResult struct {
	Mode          string  `json:"mode"`
	N             int     `json:"n"`
	Seconds       float64 `json:"seconds"`        // the whole ingest
	GenSeconds    float64 `json:"gen_seconds"`    // generating and decoding records, within it
	CPUSeconds    float64 `json:"cpu_seconds"`    // the process's CPU time (user and system) during the ingest
	Kept          int64   `json:"kept"`           //
	NearDropped   int64   `json:"near_dropped"`   //
	Injected      int     `json:"injected"`       // near copies in the stream
	Positives     int     `json:"positives"`      // injected copies at or above the threshold (exact Jaccard)
	TruePositives int     `json:"true_positives"` // positives dropped, matched with their source
	FalseDrops    int64   `json:"false_drops"`    // near drops that are not a positive
	KindDropped   []int   `json:"kind_dropped"`   // injected copies dropped, per kind
	KindInjected  []int   `json:"kind_injected"`  // per kind
	DBBytes       int64   `json:"db_bytes"`       // the run file after ingest
}

// nearChild ingests the stream into a fresh run file in AC3_BENCH_OUT and
// prints a nearResult; in near mode it then scores the drops against the
// injected copies, regenerating each with its source (no state that grows
// with the stream is held).
func nearChild(ctx context.Context) int {
	n, err := strconv.Atoi(os.Getenv(nearN))
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a conversation count\n", nearN, os.Getenv(nearN))
		return 2
	}
	mode := os.Getenv(nearMode)
	dir := os.Getenv(childOut)
	res := nearResult{Mode: mode, N: n}
	near, err := filter.NewNear(filter.NearOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// ingest records the input file's size and time; the stream is
	// generated, and this file only names it.
	marker := filepath.Join(dir, fmt.Sprintf("stream-seed%d-%d.txt", genSeed, n))
	if err := os.WriteFile(marker, []byte("generated by BenchmarkNearDedupe\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	db := filepath.Join(dir, "run.db")
	l, err := ledger.Open(ctx, db, ledger.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Close()
	stream := newNearStream(n)
	opts := ingest.Options{
		Open:     func(context.Context, string) (record.Reader, string, error) { return stream, wildchat.Format, nil },
		Dedupe:   true,
		Settings: mode,
	}
	if mode == "near" {
		opts.Near = &ledger.NearDedupe{Sketch: near.Sketch, Similarity: filter.Similarity, Threshold: near.Threshold()}
	}
	t0, cpu0 := time.Now(), cpuSeconds()
	if _, err := ingest.Run(ctx, l, []string{marker}, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res.Seconds, res.GenSeconds, res.CPUSeconds = time.Since(t0).Seconds(), stream.gen.Seconds(), cpuSeconds()-cpu0
	st, err := l.Status(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res.Kept, res.NearDropped = st.Conversations, st.Dropped[ledger.DropNearDuplicate]
	if mode == "near" {
		if err := scoreNear(ctx, l, near, n, &res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if fi, err := os.Stat(db); err == nil {
		res.DBBytes = fi.Size()
	}
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// scoreNear walks the stream's injected copies and the run's pairs side by
// side (both in record order): a positive is an injected copy whose user
// turns' exact Jaccard similarity with its source's is at or above the
// threshold; a true positive is a positive dropped and matched with its
// source.
func scoreNear(ctx context.Context, l *ledger.Ledger, near *filter.Near, n int, res *nearResult) error {
	res.KindDropped = make([]int, len(nearKinds))
	res.KindInjected = make([]int, len(nearKinds))
	// The dropped record of each pair, with the source it matched.
	type drop struct{ i, kept int }
	drops := make(chan drop, 1024)
	errc := make(chan error, 1)
	go func() {
		defer close(drops)
		errc <- l.EachNearDuplicate(ctx, func(p ledger.NearPair) error {
			i, ok1 := indexOf(p.DroppedID)
			k, ok2 := indexOf(p.KeptID)
			if !ok1 || !ok2 {
				return fmt.Errorf("pair %s > %s: not generated ids", p.DroppedID, p.KeptID)
			}
			drops <- drop{i, k}
			return nil
		})
	}()
	next, more := <-drops
	s := newNearStream(n)
	for i := range n {
		var d *drop
		for more && next.i < i {
			res.FalseDrops++ // a drop of a record that is not an injected copy
			next, more = <-drops
		}
		if more && next.i == i {
			d = &drop{next.i, next.kept}
			next, more = <-drops
		}
		src, kind, ok := injected(i)
		if !ok {
			if d != nil {
				res.FalseDrops++
			}
			continue
		}
		res.Injected++
		res.KindInjected[kind]++
		if d != nil {
			res.KindDropped[kind]++
		}
		exact := near.ExactSimilarity(s.record(i), s.original(src))
		switch {
		case exact >= near.Threshold() && d != nil && d.kept == src:
			res.Positives++
			res.TruePositives++
		case exact >= near.Threshold():
			res.Positives++
			if d != nil {
				res.FalseDrops++ // matched something other than its source
			}
		case d != nil:
			res.FalseDrops++
		}
	}
	for more {
		res.FalseDrops++
		next, more = <-drops
	}
	return <-errc
}

// BenchmarkNearDedupe is the near-dedupe figure of issue 27: ingest of the
// seeded WildChat-like stream with one record in ten a near copy of an
// earlier one, at 100k and 1M conversations (AC3_BENCH_NEAR to change),
// each in its own process: conversations per second, peak RSS (flat from
// 100k to 1M: the index is in the run file), the run file's size, and the
// recall and precision of the drops against the injected copies. The
// smallest size also runs with exact dedupe only, the baseline.
func BenchmarkNearDedupe(b *testing.B) {
	sizes := []int{100_000, 1_000_000}
	if v := os.Getenv(nearEnv); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want comma-separated conversation counts", nearEnv, v)
			}
			sizes = append(sizes, n)
		}
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	type job struct {
		mode string
		n    int
	}
	jobs := []job{{"exact", sizes[0]}}
	for _, n := range sizes {
		jobs = append(jobs, job{"near", n})
	}
	type row struct {
		nearResult
		rss int64
	}
	var rows []row
	for range b.N {
		rows = rows[:0]
		for _, j := range jobs {
			dir := b.TempDir()
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), childEnv+"=neardup", nearN+"="+strconv.Itoa(j.n), nearMode+"="+j.mode, childOut+"="+dir)
			rss, _, out, err := peakRSS(launcherBinary(b), cmd)
			if err != nil {
				b.Fatal(err)
			}
			var res nearResult
			if err := json.Unmarshal(bytes.TrimSpace(out), &res); err != nil {
				b.Fatalf("reading the child's result %q: %v", out, err)
			}
			rows = append(rows, row{res, rss})
		}
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "dedupe\tconversations\tconv/s\tconv/s without generating\tCPU ms/conv\tpeak RSS MiB\trun file MiB\tnear dropped\tinjected\tpositives\trecall\tprecision\tdropped per kind")
	for _, r := range rows {
		ingestOnly := r.Seconds - r.GenSeconds
		recall, precision := "-", "-"
		kinds := "-"
		if r.Mode == "near" {
			if r.Positives > 0 {
				recall = fmt.Sprintf("%.4f", float64(r.TruePositives)/float64(r.Positives))
			}
			if r.NearDropped > 0 {
				precision = fmt.Sprintf("%.4f", float64(r.NearDropped-r.FalseDrops)/float64(r.NearDropped))
			}
			var ks []string
			for k, kd := range nearKinds {
				ks = append(ks, fmt.Sprintf("%s %d/%d", kd.name, r.KindDropped[k], r.KindInjected[k]))
			}
			kinds = strings.Join(ks, ", ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Mode, r.N, float64(r.N)/r.Seconds, float64(r.N)/ingestOnly,
			1000*r.CPUSeconds/float64(r.N), float64(r.rss)/mb, float64(r.DBBytes)/mb, r.NearDropped, r.Injected, r.Positives, recall, precision, kinds)
		b.ReportMetric(float64(r.rss)/mb, fmt.Sprintf("MiB-RSS-%s-%d", r.Mode, r.N))
		b.ReportMetric(float64(r.N)/r.Seconds, fmt.Sprintf("conv/s-%s-%d", r.Mode, r.N))
	}
	tw.Flush()
	fmt.Fprint(os.Stderr, "\nnear dedupe (issue 27): ingest of the seeded stream, one record in ten a near copy\n"+buf.String())
	var first, last *row
	for i := range rows {
		if rows[i].Mode == "near" {
			if first == nil {
				first = &rows[i]
			}
			last = &rows[i]
		}
	}
	if first != last && float64(last.rss) > 1.5*float64(first.rss) {
		b.Errorf("peak RSS grew from %.0f MiB at %d to %.0f MiB at %d conversations", float64(first.rss)/mb, first.N, float64(last.rss)/mb, last.N)
	}
}
