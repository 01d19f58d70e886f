package grade

import (
	"context"
	"fmt"
	"time"

	"github.com/ac3/ac3/pipeline/llm/parse"
)

// Status is the outcome of grading one answer.
type Status string

const (
	// Pass: the answer is correct.
	Pass Status = "pass"
	// Fail: the answer is wrong, or no answer could be found in it.
	Fail Status = "fail"
	// NotGraded: the answer was not judged (code execution off, a task
	// without a grader, a reference that does not run on the database).
	NotGraded Status = "not_graded"
)

// Result is what grading one answer produced. It is stored with the unit
// and shown by inspect, so every field is plain text a person can read.
type Result struct {
	Task   string `json:"task"`
	Status Status `json:"status"`
	// Artifact is what was graded: the number, the SQL query, the calls as
	// parsed (rendered back in call syntax), the code.
	Artifact string `json:"artifact,omitempty"`
	// Extraction says how the artifact was found in the answer.
	Extraction string `json:"extraction,omitempty"`
	// Expected is the reference the artifact was compared with.
	Expected string `json:"expected,omitempty"`
	// Check says how the comparison was made (for example which databases
	// the queries ran on, or which tests ran).
	Check string `json:"check,omitempty"`
	// Reason is one or two sentences on why the status is what it is.
	Reason string `json:"reason"`
}

// Passed reports whether the answer was graded correct.
func (r Result) Passed() bool { return r.Status == Pass }

// Options configure a Grader. The zero value grades math, database (on
// generated data) and actions; code is left ungraded until AllowExec is set.
type Options struct {
	// DBDir holds Spider's database files as <db_id>/<db_id>.sqlite. Every
	// *.sqlite file in an instance's folder is used (the test-suite release
	// adds several per database). Empty: databases are generated from the
	// instance's schema instead.
	DBDir string
	// Fillings is how many random databases are generated per instance when
	// no Spider file is used (default 8); a query counts as correct only if
	// it agrees with the reference on all of them.
	Fillings int
	// Seed makes the generated databases reproducible (default 1).
	Seed uint64
	// QueryTimeout bounds each SQL query (default 10s).
	QueryTimeout time.Duration
	// MaxRows bounds the rows read from one query result (default 100000).
	MaxRows int
	// KeepDistinct compares queries with their DISTINCT keywords. LiC removes
	// DISTINCT from both queries before running them; so does this package
	// unless KeepDistinct is set.
	KeepDistinct bool
	// NoPlugValues turns off LiC's value plugging: when the predicted query
	// does not match as written, LiC retries it with the reference query's
	// literal values substituted into its value slots (so the query's shape
	// is graded, not its spelling of values). On by default, as in LiC.
	NoPlugValues bool

	// AllowExec lets the code grader run model-written Python. Off by
	// default: without it, code answers are NotGraded.
	AllowExec bool
	// Python is the interpreter to run (default "python3" on PATH).
	Python string
	// ExecTimeout bounds one code grading run, wall clock (default 30s).
	ExecTimeout time.Duration
	// ExecMemory bounds the address space of that run, in bytes (default
	// 1 GiB).
	ExecMemory int64
	// CodeTests chooses which tests the code grader runs (default
	// TestsAll).
	CodeTests CodeTests
}

// CodeTests says which of an instance's tests the code grader runs.
type CodeTests string

const (
	// TestsAll runs the public/private test cases and the check function,
	// whichever the instance has; all must pass.
	TestsAll CodeTests = "all"
	// TestsCases runs only the test cases (as LiC does), falling back to the
	// check function when there are none.
	TestsCases CodeTests = "cases"
	// TestsCheck runs only HumanEval's check(candidate), falling back to the
	// test cases when there is none.
	TestsCheck CodeTests = "check"
)

func (o Options) withDefaults() Options {
	if o.Fillings <= 0 {
		o.Fillings = 8
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = 10 * time.Second
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 100000
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.ExecTimeout <= 0 {
		o.ExecTimeout = 30 * time.Second
	}
	if o.ExecMemory <= 0 {
		o.ExecMemory = 1 << 30
	}
	if o.CodeTests == "" {
		o.CodeTests = TestsAll
	}
	return o
}

// Grader grades final answers to LiC instances. It is safe for concurrent
// use; each call works on its own databases and temporary directories.
type Grader struct {
	opts Options
	box  *sandbox
}

// New returns a Grader with opts (zero fields take their defaults).
func New(opts Options) *Grader {
	opts = opts.withDefaults()
	return &Grader{opts: opts, box: newSandbox(opts)}
}

// Options returns the options in effect, defaults filled in.
func (g *Grader) Options() Options { return g.opts }

// Version changes whenever a grading rule changes in a way that can turn a
// pass into a fail or back, so that grades made under other rules can be
// told apart.
const Version = "1"

// Fingerprint names Version and every option that can change a grade, in
// one line: a stage can key its units on it and a report can print it.
// Time and memory limits are included because a slow answer can pass under
// one and fail under another.
func (g *Grader) Fingerprint() string {
	o := g.opts
	db := "generated"
	if o.DBDir != "" {
		db = "files:" + o.DBDir
	}
	exec := "off"
	if o.AllowExec {
		exec = fmt.Sprintf("on(%s,%dMiB,%s)", o.ExecTimeout, o.ExecMemory>>20, o.CodeTests)
	}
	return fmt.Sprintf("grade v%s db=%s fillings=%d seed=%d query-timeout=%s max-rows=%d keep-distinct=%t plug-values=%t code=%s",
		Version, db, o.Fillings, o.Seed, o.QueryTimeout, o.MaxRows, o.KeepDistinct, !o.NoPlugValues, exec)
}

// Grade grades answer, the assistant's final message, against in.
//
// A wrong or unreadable answer is a Result with Status Fail, never an
// error. The error is reserved for what should not count against the
// answer: an instance lacking its reference (an *InstanceError, matching
// ErrBadInstance), the context ending, or code execution being impossible
// on this machine once the caller asked for it. Tasks without a grader
// (summary, data2text, ...) give a NotGraded result. Reasoning traces in
// <think> blocks are removed before grading.
//
// Grade blocks while database queries or the code sandbox run; cancelling
// ctx stops them.
func (g *Grader) Grade(ctx context.Context, in *Instance, answer string) (Result, error) {
	if in == nil {
		return Result{}, &InstanceError{Reason: "no instance"}
	}
	answer, _ = parse.SplitThink(answer)
	switch in.Task {
	case TaskMath:
		return GradeMath(in, answer)
	case TaskDatabase:
		return g.gradeDatabase(ctx, in, answer)
	case TaskActions:
		return GradeActions(in, answer)
	case TaskCode:
		return g.gradeCode(ctx, in, answer)
	}
	return Result{Task: in.Task, Status: NotGraded, Reason: "no grader for task " + quoteTask(in.Task)}, nil
}

func quoteTask(t string) string {
	if t == "" {
		return "(none)"
	}
	return "\"" + t + "\""
}
