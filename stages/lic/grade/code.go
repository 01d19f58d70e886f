package grade

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// How a code answer was found.
const (
	ExtractedPythonFence = "last ```python block with a definition"
	ExtractedAnyFence    = "last code block with a definition"
	ExtractedBareCode    = "code outside any block"
)

// ErrNoPython is returned by Grade for code instances when AllowExec is set
// but the Python interpreter cannot be found.
var ErrNoPython = errors.New("code grading needs python3, which was not found")

//go:embed runner.py
var runnerPy []byte

// ExtractCode finds the code in a code reply: the last ```python (or
// unlabelled) block holding a def or class; failing that, the last block of
// any language holding one; failing that, for a reply without blocks, the
// lines from the first top-level def, class or import up to the first
// unindented line that is not code. It returns "" when there is none.
func ExtractCode(answer string) (code, how string) {
	blocks := FencedBlocks(answer)
	hasDef := func(s string) bool {
		return strings.Contains(s, "def ") || strings.Contains(s, "class ")
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		switch blocks[i].Lang {
		case "python", "py", "python3", "py3", "":
			if hasDef(blocks[i].Body) {
				return blocks[i].Body, ExtractedPythonFence
			}
		}
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		if hasDef(blocks[i].Body) {
			return blocks[i].Body, ExtractedAnyFence
		}
	}
	if len(blocks) > 0 {
		return "", ""
	}
	lines := strings.Split(answer, "\n")
	start := -1
	for i, l := range lines {
		if isCodeStart(l) && (strings.HasPrefix(l, "def ") || strings.HasPrefix(l, "async def ") || strings.HasPrefix(l, "class ") || strings.HasPrefix(l, "import ") || strings.HasPrefix(l, "from ")) {
			start = i
			break
		}
	}
	if start < 0 {
		return "", ""
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || l[0] == ' ' || l[0] == '\t' || isCodeStart(l) {
			continue
		}
		end = i
		break
	}
	code = strings.TrimRight(strings.Join(lines[start:end], "\n"), "\n ")
	if !hasDef(code) {
		return "", ""
	}
	return code, ExtractedBareCode
}

func isCodeStart(l string) bool {
	for _, p := range []string{"def ", "async def ", "class ", "import ", "from ", "@", "#", ")", "]", "}"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	// a top-level assignment: NAME = ...
	i := strings.IndexByte(l, '=')
	return i > 0 && (i+1 == len(l) || l[i+1] != '=') && isIdent(strings.TrimSpace(l[:i]))
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// runnerSpec is what runner.py reads on stdin.
type runnerSpec struct {
	Nonce          string `json:"nonce"`
	Code           string `json:"code"`
	FuncName       string `json:"func_name"`
	Prompt         string `json:"prompt"`
	Cases          string `json:"cases,omitempty"`
	Private        string `json:"private,omitempty"`
	Check          string `json:"check,omitempty"`
	Tests          string `json:"tests"`
	PerTestSeconds int    `json:"per_test_seconds"`
	Memory         int64  `json:"memory"`
	CPUSeconds     int    `json:"cpu_seconds"`
	BlockNetwork   bool   `json:"block_network"`
}

// runnerReport is the line runner.py writes back.
type runnerReport struct {
	Status string   `json:"status"` // pass, fail, bad_instance
	Reason string   `json:"reason"`
	Notes  []string `json:"notes"`
}

func (g *Grader) gradeCode(ctx context.Context, in *Instance, answer string) (Result, error) {
	if strings.TrimSpace(in.Test) == "" && len(bytes.TrimSpace(in.PublicTestCases)) == 0 && in.PrivateTestCases == "" {
		return Result{}, badInstance(in, "the code instance has no tests (test, public_test_cases)")
	}
	r := Result{Task: TaskCode, Expected: "the instance's tests pass"}
	if fn := in.FuncName(); fn != "" {
		r.Expected = "function " + fn + " passes the instance's tests"
	}
	code, how := ExtractCode(answer)
	r.Artifact, r.Extraction = code, how
	if !g.opts.AllowExec {
		// Every code answer is left ungraded, even one without code, so that
		// an accuracy over graded answers is not made of failures only.
		r.Status = NotGraded
		r.Reason = "code execution is off; run with code execution allowed (AllowExec) to grade code answers"
		if code == "" {
			r.Reason += " (no Python function was found in this answer)"
		}
		return r, nil
	}
	if code == "" {
		r.Status, r.Reason = Fail, "no Python function found in the answer"
		return r, nil
	}
	iso, err := g.box.isolation(ctx)
	if err != nil {
		return Result{}, err
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return Result{}, fmt.Errorf("making a nonce for the code runner: %w", err)
	}
	spec := runnerSpec{
		Nonce:          "ac3-grade-" + hex.EncodeToString(nonce[:]) + ":",
		Code:           code,
		FuncName:       in.FuncName(),
		Prompt:         in.Prompt,
		Cases:          string(in.PublicTestCases),
		Private:        in.PrivateTestCases,
		Check:          in.Test,
		Tests:          string(g.opts.CodeTests),
		PerTestSeconds: int(math.Max(1, math.Floor(g.opts.ExecTimeout.Seconds()*0.8))),
		Memory:         g.opts.ExecMemory,
		CPUSeconds:     int(math.Ceil(g.opts.ExecTimeout.Seconds())) + 1,
		BlockNetwork:   !iso.netns,
	}
	r.Check = fmt.Sprintf("%s sandbox: %s; %s, %d MiB address space, throw-away directory; tests: %s",
		filepath.Base(g.opts.Python), iso.describe(), g.opts.ExecTimeout, g.opts.ExecMemory>>20, g.opts.CodeTests)
	rep, err := g.box.run(ctx, iso, spec)
	if err != nil {
		var fe *failError
		if errors.As(err, &fe) {
			r.Status, r.Reason = Fail, fe.reason
			return r, nil
		}
		return Result{}, err
	}
	switch rep.Status {
	case "pass":
		r.Status = Pass
	case "fail":
		r.Status = Fail
	case "bad_instance":
		return Result{}, badInstance(in, "%s", rep.Reason)
	default:
		r.Status = NotGraded
	}
	r.Reason = rep.Reason
	if len(rep.Notes) > 0 {
		r.Reason += " (" + strings.Join(rep.Notes, "; ") + ")"
	}
	return r, nil
}

// failError is a run that ended in a way that fails the answer: killed at
// the time limit, crashed, or wrote no report.
type failError struct{ reason string }

func (e *failError) Error() string { return e.reason }

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

// run starts runner.py in a fresh temporary directory with spec on stdin
// and returns its report.
func (b *sandbox) run(ctx context.Context, iso isolation, spec runnerSpec) (runnerReport, error) {
	dir, err := os.MkdirTemp("", "ac3-grade-code-")
	if err != nil {
		return runnerReport{}, fmt.Errorf("making the code sandbox directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "runner.py"), runnerPy, 0o644); err != nil {
		return runnerReport{}, fmt.Errorf("writing the code runner: %w", err)
	}
	if err := iso.prepareDir(dir); err != nil {
		return runnerReport{}, err
	}
	in, err := json.Marshal(spec)
	if err != nil {
		return runnerReport{}, fmt.Errorf("encoding the code runner's input: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, b.opts.ExecTimeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, iso.python, "-s", "-B", "runner.py")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + filepath.Dir(iso.python) + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + dir,
		"TMPDIR=" + dir,
		"LANG=C.UTF-8",
		"PYTHONHASHSEED=0",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONIOENCODING=utf-8",
	}
	cmd.Stdin = bytes.NewReader(in)
	stdout := &limitedBuffer{max: 1 << 20}
	stderr := &limitedBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	iso.configure(cmd)
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return runnerReport{}, ctx.Err()
	}
	for _, line := range strings.Split(stdout.buf.String(), "\n") {
		rest, ok := strings.CutPrefix(line, spec.Nonce)
		if !ok {
			continue
		}
		var rep runnerReport
		if err := json.Unmarshal([]byte(rest), &rep); err != nil {
			return runnerReport{}, &failError{"the code runner's report is unreadable"}
		}
		return rep, nil
	}
	if rctx.Err() != nil {
		return runnerReport{}, &failError{fmt.Sprintf("time limit of %s exceeded", b.opts.ExecTimeout)}
	}
	reason := "the run ended without a report"
	if runErr != nil {
		reason += " (" + runErr.Error() + ")"
	}
	if tail := strings.TrimSpace(stderr.buf.String()); tail != "" {
		if i := strings.LastIndex(tail, "\n"); i >= 0 {
			tail = tail[i+1:]
		}
		reason += ": " + tail
	}
	return runnerReport{}, &failError{reason}
}
