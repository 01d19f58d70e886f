package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/ac3/ac3/pipeline/ledger"
	"github.com/ac3/ac3/pipeline/llm/llmtest"
	"github.com/ac3/ac3/pipeline/synth"
	"github.com/ac3/ac3/run"
	"github.com/ac3/ac3/stages/analyze/analyzetest"
)

// chaosEnv selects the full chaos test (`just chaos`): at least 300
// conversations and 20 kills. Without it a short form runs: at least 40
// conversations and 5 kills.
const chaosEnv = "AC3_CHAOS"

// chaosForm is the size of one form of the chaos test.
type chaosForm struct {
	records int // synthetic WildChat records written; about 37% pass the e2e filters
	convs   int // conversations the run must keep at least
	kills   int // SIGKILLs that must land on a live process
}

var (
	chaosShort = chaosForm{records: 90, convs: 40, kills: 5}
	chaosFull  = chaosForm{records: 860, convs: 300, kills: 20}
)

// chaosFaults is every fault the endpoint injects, with the share of
// arrivals each hits. Each request meets at most two of them, so every
// request is answered well within the client's five attempts for failures
// (rate limits do not count against them) and the run ends with the same
// units as a fault-free one.
func chaosFaults() []llmtest.ChaosFault {
	status := func(p float64, code int, headers map[string]string) llmtest.ChaosFault {
		return llmtest.ChaosFault{P: p, Fault: llmtest.Fault{Kind: llmtest.Status, Status: code, Headers: headers}}
	}
	kind := func(p float64, k llmtest.FaultKind) llmtest.ChaosFault {
		return llmtest.ChaosFault{P: p, Fault: llmtest.Fault{Kind: k}}
	}
	return []llmtest.ChaosFault{
		status(0.02, 429, map[string]string{"Retry-After": "1"}),
		status(0.02, 429, map[string]string{"retry-after-ms": "40"}),
		status(0.02, 429, nil),
		status(0.01, 503, map[string]string{"Retry-After": "1"}),
		status(0.03, 500, nil),
		status(0.01, 502, nil),
		kind(0.005, llmtest.Hang), // held until the client's 3 s timeout gives up
		kind(0.02, llmtest.Reset),
		kind(0.02, llmtest.Truncated),
		kind(0.02, llmtest.Malformed),
		// A garbled answer only where the stage parses it (and asks again
		// with a fresh draw): to the respondent, any text is an answer.
		{P: 0.01, Fault: llmtest.Fault{Kind: llmtest.Garbled}, Match: func(r llmtest.ChatRequest) bool {
			stage, _ := chaosClassify(r)
			return stage != "respond"
		}},
	}
}

// TestChaosKillsAndFaults runs the e2e config over synthetic WildChat
// conversations against the scripted endpoint injecting every kind of fault,
// kills the `ac3 run` process with SIGKILL at seeded random moments and
// resumes it each time, then checks that:
//
//   - every unit ended done, or failed with a reason, and none is left
//     unattempted;
//   - no request was sent again once its answer was stored, and no request
//     of a unit was sent after the unit was recorded done (only requests in
//     flight at a kill may repeat);
//   - the exports and every number of report.json outside the spend tables
//     are byte-identical to a run that met no fault and no kill;
//   - the run file passes SQLite's integrity check after every kill.
//
// Set AC3_CHAOS=1 (`just chaos`) for the full form.
func TestChaosKillsAndFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for a minute")
	}
	form := chaosShort
	if os.Getenv(chaosEnv) != "" {
		form = chaosFull
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "chats.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteWildChat(f, synth.Options{Seed: 9, Conversations: form.records, MaxTurns: 6}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// The reference: no fault, no kill.
	ref := startScripted(t)
	refCfg := chaosConfig(t, dir, "ref", in)
	start := time.Now()
	if out, err := chaosRun(refCfg, ref.URL).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	refCalls := ref.Count()
	t.Logf("reference run: %d requests in %v", refCalls, time.Since(start).Round(time.Millisecond))
	refStatus := chaosStatus(t, filepath.Join(dir, "ref", "e2e.db"))
	if refStatus.Conversations < int64(form.convs) {
		t.Fatalf("the run kept %d conversations, want at least %d: write more records", refStatus.Conversations, form.convs)
	}

	// The chaos run.
	srv := startScripted(t)
	srv.SetChaos(&llmtest.Chaos{Seed: 20261201, Faults: chaosFaults(), MaxPerRequest: 2})
	cfg := chaosConfig(t, dir, "chaos", in)
	db := filepath.Join(dir, "chaos", "e2e.db")
	obs := &chaosObserver{cached: map[string]int{}, done: map[chaosTask]chaosDone{}}
	rng := rand.New(rand.NewPCG(20261201, 9)) // fixed seed: the same triggers in every run
	// Kill k (0-based) comes when the endpoint has seen (k+u)/K of the
	// reference run's request count, u drawn in [0.1, 0.9): the kills
	// spread over every stage, and the run, which meets about a third more
	// arrivals than the reference, is unfinished at the last one.
	step := float64(refCalls) / float64(form.kills)
	kills := 0
	for kills < form.kills {
		if len(obs.lives) >= form.kills+10 {
			t.Fatalf("%d kills landed in %d runs, want %d", kills, len(obs.lives), form.kills)
		}
		// Most runs are killed at their arrival count, with requests in
		// flight; every fifth once no request has arrived for a random
		// time under 2 s, which lands in ingest, planning, between stages,
		// the report or the exports. (A run that reaches the report before
		// its count is killed after 4 s without a request.)
		target := int((float64(kills) + 0.1 + 0.8*rng.Float64()) * step)
		d := 4 * time.Second
		if len(obs.lives)%5 == 2 {
			d = time.Duration(100+rng.IntN(1900)) * time.Millisecond
		}
		lf := chaosLife{start: time.Now(), from: srv.Count()}
		cmd := chaosRun(cfg, lf.open(t, srv))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var werr error
		seen, quiet := lf.from, lf.start
		tick := time.NewTicker(2 * time.Millisecond)
	wait:
		for {
			select {
			case werr = <-exited:
				break wait
			case now := <-tick.C:
				if c := srv.Count(); c != seen {
					seen, quiet = c, now
				}
				if seen >= target || now.Sub(quiet) >= d {
					_ = cmd.Process.Signal(syscall.SIGKILL)
					werr = <-exited
					break wait
				}
			}
		}
		tick.Stop()
		lf.end = time.Now()
		lf.to = srv.Count()
		var ee *exec.ExitError
		if errors.As(werr, &ee) && !ee.Exited() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
			lf.killed = true
			kills++
		} else if werr != nil {
			t.Fatalf("run %d failed on its own: %v\n%s", len(obs.lives)+1, werr, out.String())
		}
		obs.add(t, db, lf)
		t.Logf("run %d: %d arrivals, %d tasks done, %v, killed %v (trigger: arrival %d or %v without one)", len(obs.lives), lf.to-lf.from, obs.lives[len(obs.lives)-1].newDone, lf.end.Sub(lf.start).Round(time.Millisecond), lf.killed, target, d)
		if !lf.killed {
			t.Fatalf("the run finished after %d of %d kills: the kills come too late", kills, form.kills)
		}
	}

	// Finish the run, then run it once more: a finished run sends nothing.
	lf := chaosLife{start: time.Now(), from: srv.Count()}
	out, err := chaosRun(cfg, lf.open(t, srv)).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == run.ExitFailed {
		t.Errorf("the final run ended with failed units:\n%s", out)
	} else if err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	lf.end, lf.to = time.Now(), srv.Count()
	obs.add(t, db, lf)
	t.Logf("final run: %d arrivals, %v", lf.to-lf.from, lf.end.Sub(lf.start).Round(time.Millisecond))
	before := srv.Count()
	if out, err := chaosRun(cfg, srv.URL).CombinedOutput(); err != nil {
		t.Fatalf("run of a finished run: %v\n%s", err, out)
	}
	if n := srv.Count() - before; n != 0 {
		t.Errorf("running a finished run again sent %d requests", n)
	}

	obs.checkArrivals(t, srv.Calls(), chaosConvIndex(t, db))

	// Every unit ended done or failed with a reason; nothing is pending.
	st := chaosStatus(t, db)
	if len(st.Stages) != len(refStatus.Stages) {
		t.Fatalf("%d stage variants, the reference has %d", len(st.Stages), len(refStatus.Stages))
	}
	for i, s := range st.Stages {
		r := refStatus.Stages[i]
		if s.Pending != 0 || s.Done+s.Failed != r.Done+r.Failed || s.UnitsDone+s.UnitsFailed != r.UnitsDone+r.UnitsFailed {
			t.Errorf("%s/%s: %d done, %d failed, %d pending tasks, %d+%d units; the reference: %d, %d, %d, %d+%d",
				s.Stage, s.Variant, s.Done, s.Failed, s.Pending, s.UnitsDone, s.UnitsFailed, r.Done, r.Failed, r.Pending, r.UnitsDone, r.UnitsFailed)
		}
		for _, fl := range s.Failures {
			if fl.Reason == "" {
				t.Errorf("%s/%s: %d units failed without a reason", s.Stage, s.Variant, fl.Units)
			}
			t.Logf("%s/%s: %d units failed: %s (e.g. %+v)", s.Stage, s.Variant, fl.Units, fl.Reason, fl.Example)
		}
	}
	if n := chaosCount(t, db, `SELECT count(*) FROM units WHERE status = 'failed' AND (reason = '' OR error = '')`); n != 0 {
		t.Errorf("%d failed units have no reason", n)
	}

	// The exports and the report's numbers are those of the reference.
	chaosCompareOutputs(t, filepath.Join(dir, "ref", "e2e"), filepath.Join(dir, "chaos", "e2e"))

	// Every kind of fault was met.
	faults := map[string]int{}
	for _, c := range srv.Calls() {
		if c.Fault == llmtest.Status {
			faults[fmt.Sprint(c.Status)]++
		} else if c.Rule == "chaos" {
			faults[c.Fault.String()]++
		}
	}
	for _, f := range chaosFaults() {
		name := f.Fault.Kind.String()
		if f.Fault.Kind == llmtest.Status {
			name = fmt.Sprint(f.Fault.Status)
		}
		if faults[name] == 0 {
			t.Errorf("no arrival met the %s fault", name)
		}
	}
	t.Logf("%d kills in %d runs; %d requests in all (%d in the reference); faults met: %v", kills, len(obs.lives), srv.Count(), refCalls, faults)
}

// chaosConfig writes the e2e config for a run named name in dir, over the
// input in: the run file and outputs under dir/name, a 3 s timeout per
// attempt (so hung requests are given up quickly), a budget the run cannot
// reach, and two more exports.
func chaosConfig(t testing.TB, dir, name, in string) string {
	t.Helper()
	raw, err := os.ReadFile("../../fixtures/configs/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	for _, r := range [][2]string{
		{"../../runs/", filepath.Join(dir, name) + "/"},
		{"../wildchat/wildchat-1m-sample10.jsonl", in},
		{"timeout: 60s\n", "timeout: 3s\n"},
		{"budget_usd: 5\n", "budget_usd: 1000\n"},
		{"  - {what: winners, format: jsonl}\n", "  - {what: winners, format: jsonl}\n  - {what: curated, format: jsonl}\n  - {what: annotations, format: jsonl}\n"},
	} {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("the e2e config no longer has %q", r[0])
		}
		cfg = strings.ReplaceAll(cfg, r[0], r[1])
	}
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// chaosRun is `ac3 run --config cfg` as a process of its own, against the
// endpoint at url.
func chaosRun(cfg, url string) *exec.Cmd {
	cmd := exec.Command(ac3Binary(), "run", "--config", cfg)
	cmd.Env = append(os.Environ(), "AC3_TEST_AS_CLI=1", "AC3_E2E_BASE_URL="+url)
	return cmd
}

func chaosStatus(t *testing.T, db string) ledger.Status {
	t.Helper()
	out := mustRun(t, "status", "--db", db, "--json")
	var st ledger.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

// chaosOpen opens the run file read-only, as a reader beside the run would.
func chaosOpen(t *testing.T, db string) *sql.DB {
	t.Helper()
	h, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func chaosCount(t *testing.T, db, query string) int {
	t.Helper()
	h := chaosOpen(t, db)
	defer h.Close()
	var n int
	if err := h.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// chaosLife is one `ac3 run` process: when it ran, which arrivals at the
// endpoint (indexes into its log) came while it lived, and the endpoint's
// door it was given, through which all its requests came.
type chaosLife struct {
	start, end time.Time
	from, to   int
	door       int
	killed     bool
	newDone    int // tasks first seen done after it
}

// chaosTask is a stage variant over one conversation.
type chaosTask struct{ stage, variant, conv string }

// chaosDone is when a task was first seen done: after which process, and
// the second its row says it was committed in.
type chaosDone struct {
	life    int
	updated time.Time
}

// chaosObserver reads the run file after each process ends: which answers
// are stored and which tasks are done, and whether the file is whole.
type chaosObserver struct {
	lives  []chaosLife
	cached map[string]int // cache key → first process after which it was stored
	done   map[chaosTask]chaosDone
}

func (o *chaosObserver) add(t *testing.T, db string, lf chaosLife) {
	t.Helper()
	i := len(o.lives)
	o.lives = append(o.lives, lf)
	if _, err := os.Stat(db); err != nil {
		return // killed before the run file was made
	}
	h := chaosOpen(t, db)
	defer h.Close()
	var check string
	if err := h.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("after run %d: integrity check says %q (%v)", i+1, check, err)
	}
	var exists int
	if err := h.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'llm_cache'`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists == 0 {
		return
	}
	rows, err := h.Query(`SELECT key FROM llm_cache`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		if _, ok := o.cached[k]; !ok {
			o.cached[k] = i
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = h.Query(`SELECT t.stage, t.variant, c.id, t.updated FROM tasks t JOIN conversations c ON c.seq = t.conv_seq WHERE t.status = 'done'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k chaosTask
		var updated string
		if err := rows.Scan(&k.stage, &k.variant, &k.conv, &updated); err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339, updated)
		if err != nil {
			t.Fatalf("task %v updated %q: %v", k, updated, err)
		}
		if _, ok := o.done[k]; !ok {
			o.done[k] = chaosDone{life: i, updated: at}
			o.lives[i].newDone++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// chaosReq is what a request asks for: the stage, the conversation, and the
// variants whose units could have sent it.
type chaosReq struct {
	stage    string
	conv     string
	variants []string
}

var judgeLabels = regexp.MustCompile(`(?s)=== Candidate A ===\n.*?\[(FC|GR|AO)\] My reply.*=== Candidate B ===\n.*?\[(FC|GR|AO)\] My reply`)

// strategiesOf lists the strategies whose context the scripted respondent
// answers with label: gated-reset before its first reset is fc's context.
func strategiesOf(label string) []string {
	switch label {
	case "AO":
		return []string{"ao"}
	case "GR":
		return []string{"gated-reset"}
	}
	return []string{"fc", "gated-reset"}
}

// chaosClassify tells which stage sent a request and which variants could
// have, with the same matchers as the scripted endpoint's rules (a faulted
// arrival is logged under "chaos", so its rule name says nothing).
func chaosClassify(req llmtest.ChatRequest) (stage string, variants []string) {
	switch {
	case strings.Contains(req.System(), "two candidate replies"):
		m := judgeLabels.FindStringSubmatch(req.Last())
		if m == nil {
			return "judge", nil
		}
		for _, pair := range []string{"gated-reset:ao", "gated-reset:fc", "fc:ao"} {
			a, b, _ := strings.Cut(pair, ":")
			if (slicesHas(strategiesOf(m[1]), a) && slicesHas(strategiesOf(m[2]), b)) ||
				(slicesHas(strategiesOf(m[1]), b) && slicesHas(strategiesOf(m[2]), a)) {
				variants = append(variants, pair)
			}
		}
		return "judge", variants
	case classifyTurn.MatchString(req.Last()):
		return "classify", []string{"llm"}
	case constrTurn.MatchString(req.Last()):
		return "constraints", []string{"llm"}
	case analyzetest.Kind(req) != "":
		return "curate", []string{"gated-reset"}
	}
	label := labelRe.FindStringSubmatch(respondentAnswer(req))
	if label == nil {
		return "respond", nil
	}
	return "respond", strategiesOf(label[1])
}

func slicesHas(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// chaosConvIndex maps the lines of the run's user messages to their
// conversation: every prompt quotes some of them verbatim. Short lines and
// lines found in two conversations are left out.
func chaosConvIndex(t *testing.T, db string) map[string]string {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, db, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	idx := map[string]string{}
	for after := int64(0); ; {
		page, err := l.ConversationPage(ctx, after, 500)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, sc := range page {
			after = sc.Seq
			for _, tr := range sc.Conv.Turns() {
				for _, line := range strings.Split(sc.Conv.Messages[tr.User].Content, "\n") {
					line = strings.TrimSpace(line)
					if len(line) < 24 {
						continue
					}
					if c, ok := idx[line]; ok && c != sc.Conv.ID {
						idx[line] = ""
						continue
					}
					idx[line] = sc.Conv.ID
				}
			}
		}
	}
	return idx
}

// chaosConvOf finds the one conversation a request quotes, or "".
func chaosConvOf(idx map[string]string, req llmtest.ChatRequest) string {
	found := ""
	for _, m := range req.Messages {
		for _, line := range strings.Split(m.Content, "\n") {
			c := idx[strings.TrimSpace(line)]
			if c == "" {
				continue
			}
			if found != "" && found != c {
				return ""
			}
			found = c
		}
	}
	return found
}

// chaosTimeout is the chaos config's timeout per attempt.
const chaosTimeout = 3 * time.Second

// chaosAnswer is a well-formed answer the endpoint gave: when it ended,
// which arrival it answered, and how long the server took.
type chaosAnswer struct {
	end     time.Time
	arrival int
	took    time.Duration
}

// open gives the process a door of its own at the endpoint and returns its
// base URL.
func (lf *chaosLife) open(t *testing.T, srv *llmtest.Server) string {
	t.Helper()
	url, door, err := srv.Door()
	if err != nil {
		t.Fatal(err)
	}
	lf.door = door
	return url
}

// lifeOfArrivals lists, for each process, the arrivals that were its
// requests, by the door they came through. The arrivals logged while a
// process lived are not all its own: a request a killed process wrote just
// before the kill can be read by the endpoint after the next process
// started, even on a connection accepted only then.
func (o *chaosObserver) lifeOfArrivals(t *testing.T, calls []llmtest.Call) [][]int {
	t.Helper()
	byDoor := map[int]int{}
	for li, lf := range o.lives {
		byDoor[lf.door] = li
	}
	out := make([][]int, len(o.lives))
	for i, c := range calls {
		li, ok := byDoor[c.Door]
		if !ok {
			t.Errorf("arrival %d came through door %d, which no process was given", i, c.Door)
			continue
		}
		out[li] = append(out[li], i)
	}
	return out
}

// checkArrivals reads the endpoint's log process by process. A request may
// arrive again only when no answer to it was stored before it came: in the
// same process after a well-formed answer, or in a later process after the
// run file held its answer, it was paid for twice. And no request of a task
// may arrive once the task was recorded done: in a later process, or in the
// same one a second after the second its row was written in.
func (o *chaosObserver) checkArrivals(t *testing.T, calls []llmtest.Call, idx map[string]string) {
	t.Helper()
	var repeats, unmapped, inFlight int
	byLife := o.lifeOfArrivals(t, calls)
	for li, lf := range o.lives {
		answered := map[string]chaosAnswer{} // key → the first well-formed answer in this process
		for _, i := range byLife[li] {
			c := calls[i]
			if c.Key == "" {
				t.Fatalf("arrival %d carries no request key", i)
			}
			if at, ok := o.cached[c.Key]; ok && at < li {
				t.Errorf("run %d sent request %s (arrival %d, %s) again; its answer was stored by run %d", li+1, short(c.Key), i, c.Request.Model, at+1)
			}
			if a, ok := answered[c.Key]; ok && c.Time.After(a.end) {
				t.Errorf("run %d sent request %s (arrival %d) again %v after a well-formed answer to it (arrival %d, answered in %v)",
					li+1, short(c.Key), i, c.Time.Sub(a.end).Round(time.Microsecond), a.arrival, a.took.Round(time.Millisecond))
			}
			if c.Nth > 1 && c.Fault == llmtest.NoFault {
				repeats++
			}
			stage, variants := chaosClassify(c.Request)
			conv := chaosConvOf(idx, c.Request)
			if conv == "" || len(variants) == 0 {
				unmapped++
			} else {
				allDone, sameLife := true, true
				for _, v := range variants {
					d, ok := o.done[chaosTask{stage, v, conv}]
					switch {
					case !ok || d.life > li:
						allDone = false
					case d.life < li:
						sameLife = false
					case !c.Time.After(d.updated.Add(time.Second)):
						allDone = false
					}
				}
				if allDone {
					when := "in an earlier run"
					if sameLife {
						when = "a second before"
					}
					t.Errorf("run %d sent a %s request for %s (%v) after every task that could send it was done %s", li+1, stage, conv, variants, when)
				}
			}
			// An answer the server took the client's whole timeout to give
			// came after the client had given up on it (it sends again, as
			// for a hang): it was never received, so not paid twice.
			if took := c.End.Sub(c.Time); c.Status == 200 && (c.Fault == llmtest.NoFault || c.Fault == llmtest.Garbled) && !c.End.IsZero() && took < chaosTimeout {
				if _, ok := answered[c.Key]; !ok {
					answered[c.Key] = chaosAnswer{end: c.End, arrival: i, took: took}
				}
			}
		}
		if lf.killed {
			// Requests answered in this process whose answer was not
			// stored: they were in flight when the kill came.
			for k := range answered {
				if at, ok := o.cached[k]; !ok || at > li {
					inFlight++
				}
			}
		}
	}
	early := map[string]int{}
	for k, d := range o.done {
		if d.life < len(o.lives)-1 {
			early[k.stage]++
		}
	}
	t.Logf("tasks done before the final run, by stage: %v", early)
	if unmapped > len(calls)/100 {
		t.Errorf("%d of %d arrivals could not be traced to a conversation and stage", unmapped, len(calls))
	}
	t.Logf("arrivals: %d in all, %d answered again after an earlier fault or kill, %d answered but unstored at a kill, %d not traced to a task", len(calls), repeats, inFlight, unmapped)
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

// spendPaths are the report.json numbers that count calls, tokens and
// dollars: faults and kills change them (failed attempts, answers asked
// again after a kill, fresh draws after a garbled answer) and nothing else.
var spendPaths = regexp.MustCompile(`^\.(cost\.|analysis_cost\.\d+\.(analysis_calls|operator_calls|cached_calls|prompt_tokens|completion_tokens|analysis_usd|operator_usd|per_analyzed_turn_usd|per_analyzed_turn_calls):)`)

// chaosCompareOutputs compares every file the two runs wrote: exports byte
// for byte, report.json number by number outside the spend tables. The
// HTML and Markdown reports print the spend table and are left out.
func chaosCompareOutputs(t *testing.T, refDir, dir string) {
	t.Helper()
	entries, err := os.ReadDir(refDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	compared := 0
	for _, name := range names {
		a, err := os.ReadFile(filepath.Join(refDir, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("the chaos run did not write %s: %v", name, err)
			continue
		}
		switch name {
		case "report.html", "report.md":
			// Everything but the tables of what was paid.
			if ma, mb := maskSpend(a), maskSpend(b); !bytes.Equal(ma, mb) {
				t.Errorf("%s differs from the reference's outside the cost by role:\n%s", name, firstDiff(ma, mb))
			}
		case "report.json":
			for _, d := range strings.Split(jsonDiff(a, b), "\n") {
				if d != "" && !spendPaths.MatchString(d) {
					t.Errorf("report.json differs from the reference's: %s", d)
				}
			}
		default:
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs from the reference's (%d vs %d bytes)", name, len(a), len(b))
			}
		}
		compared++
	}
	if compared < 8 {
		t.Errorf("compared %d outputs (%v), want the three reports and five exports", compared, names)
	}
}

// maskSpend removes the two tables of a Markdown or HTML report that say
// what was paid, which kills and faults change (each says so): the
// analysis cost and the cost by role, from each heading to the next
// heading of its level, or the end.
func maskSpend(b []byte) []byte {
	for _, title := range []string{"Analysis cost", "Cost by role"} {
		// HTML headings carry an anchor id: <h2 id="…">Title</h2>.
		for _, h := range [][2]string{{"\n## " + title + "\n", "\n## "}, {">" + title + "</h2>", "<h2"}} {
			i := bytes.Index(b, []byte(h[0]))
			if i < 0 {
				continue
			}
			rest := b[i+len(h[0]):]
			if h[1] == "<h2" {
				i = bytes.LastIndex(b[:i], []byte("<h2"))
			}
			end := bytes.Index(rest, []byte(h[1]))
			if end < 0 {
				if end = bytes.Index(rest, []byte("</body>")); end < 0 {
					end = len(rest)
				}
			}
			b = append(append(bytes.Clone(b[:i]), "[masked: "+title+"]"...), rest[end:]...)
		}
	}
	return b
}

// firstDiff shows where two outputs part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-120)
	return fmt.Sprintf("at byte %d:\n  reference: %q\n  this run:  %q", i, a[from:min(len(a), i+120)], b[from:min(len(b), i+120)])
}
