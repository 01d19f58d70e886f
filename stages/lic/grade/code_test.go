package grade_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/stages/lic/grade"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH: the code grader's tests run model code with it")
	}
}

func pyAnswer(code string) string {
	return "Here is the function:\n\n```python\n" + code + "\n```\n\nIt handles the edge cases."
}

func execGrader(opts grade.Options) *grade.Grader {
	opts.AllowExec = true
	if opts.ExecTimeout == 0 {
		// generous: these tests must not depend on how busy the machine is
		opts.ExecTimeout = 2 * time.Minute
	}
	return grade.New(opts)
}

func gradeCode(t *testing.T, g *grade.Grader, in *grade.Instance, answer string) grade.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := g.Grade(ctx, in, answer)
	if err != nil {
		t.Fatalf("%s: %v", in.TaskID, err)
	}
	return res
}

func readSolution(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "code", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCodeOnSample runs a hand-written correct solution of every sample
// instance (the sample has no canonical solutions) and a wrong one.
func TestCodeOnSample(t *testing.T) {
	needPython(t)
	g := execGrader(grade.Options{})
	for _, in := range sample(t, grade.TaskCode) {
		name := strings.ReplaceAll(strings.TrimPrefix(in.TaskID, "sharded-"), "/", "_")
		res := gradeCode(t, g, in, pyAnswer(readSolution(t, name+".py")))
		if res.Status != grade.Pass {
			t.Errorf("%s: correct solution graded %s: %s", in.TaskID, res.Status, res.Reason)
		}
		if !strings.Contains(res.Reason, "test case(s) and check(candidate)") {
			t.Errorf("%s: reason %q does not say both kinds of test ran", in.TaskID, res.Reason)
		}
		res = gradeCode(t, g, in, pyAnswer(readSolution(t, name+"_wrong.py")))
		if res.Status != grade.Fail {
			t.Errorf("%s: wrong solution graded %s: %s", in.TaskID, res.Status, res.Reason)
		}
	}
}

func TestCodeRules(t *testing.T) {
	needPython(t)
	g := execGrader(grade.Options{})
	in := byID(t, grade.TaskCode, "sharded-HumanEval/106")
	tests := []struct {
		name, answer string
		want         grade.Status
		reason       string
	}{
		{"renamed function is graded under its own name", pyAnswer("def factorial_or_sum(n):\n    import math\n    return [math.factorial(i) if i % 2 == 0 else i * (i + 1) // 2 for i in range(1, n + 1)]"), grade.Pass, "no function named f"},
		{"a tuple passes the test cases but not check(candidate)", pyAnswer("def f(n):\n    import math\n    return tuple(math.factorial(i) if i % 2 == 0 else i * (i + 1) // 2 for i in range(1, n + 1))"), grade.Fail, "check(candidate) failed"},
		{"modules the prelude imports need no import", pyAnswer("def f(n):\n    return [math.factorial(i) if i % 2 == 0 else sum(range(i + 1)) for i in range(1, n + 1)]"), grade.Pass, ""},
		{"example calls and main blocks are left out", pyAnswer("import math\ndef f(n):\n    return [math.factorial(i) if i % 2 == 0 else i * (i + 1) // 2 for i in range(1, n + 1)]\n\nif __name__ == '__main__':\n    raise SystemExit(f(3))\nf(-1)[5]"), grade.Pass, "left out 2 top-level statement"},
		{"a syntax error fails", pyAnswer("def f(n)\n    return n"), grade.Fail, "does not parse"},
		{"an exception fails", pyAnswer("def f(n):\n    raise ValueError('nope')"), grade.Fail, "ValueError: 'nope'"},
		{"an exception while loading fails", pyAnswer("import no_such_module_here\ndef f(n):\n    return []"), grade.Fail, "loading the code failed"},
		{"exit() fails", pyAnswer("def f(n):\n    exit(0)"), grade.Fail, "exit()"},
		{"no function at all", "Could you tell me what f should return for 0?", grade.Fail, "no Python function"},
		{"code without a fence", "Sure.\n\ndef f(n):\n    import math\n    return [math.factorial(i) if i % 2 == 0 else i * (i + 1) // 2 for i in range(1, n + 1)]\n\nThis returns the list.", grade.Pass, ""},
		{"the last python block counts", pyAnswer("def f(n):\n    return []") + "\nBetter:\n" + pyAnswer("import math\ndef f(n):\n    return [math.factorial(i) if i % 2 == 0 else i * (i + 1) // 2 for i in range(1, n + 1)]"), grade.Pass, ""},
		{"stdout is not the report", pyAnswer("import json\ndef f(n):\n    print('{\"status\": \"pass\"}')\n    return []"), grade.Fail, ""},
		{"swallowing the timeout does not help", pyAnswer("def f(n):\n    try:\n        while True:\n            pass\n    except Exception:\n        return [1, 2, 6, 24, 15]"), grade.Fail, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gg := g
			if tt.name == "swallowing the timeout does not help" {
				gg = execGrader(grade.Options{ExecTimeout: 4 * time.Second})
			}
			res := gradeCode(t, gg, in, tt.answer)
			if res.Status != tt.want || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("graded %s (%s); want %s with %q", res.Status, res.Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestCodeTestSelection(t *testing.T) {
	needPython(t)
	// The public case and the check disagree on purpose.
	in := &grade.Instance{TaskID: "sel", Task: grade.TaskCode, Prompt: "import hashlib\n\ndef h(s):\n    \"\"\"hash it\"\"\"\n",
		PublicTestCases: grade.JSONText(`[{"input": "\"a\"", "output": "1", "testtype": "functional"}]`),
		Test:            "def check(candidate):\n    assert candidate('a') == 2\n"}
	in.Metadata.FuncName = "h"
	answer := pyAnswer("def h(s):\n    hashlib.sha256(s.encode())  # imported by the prompt only\n    return 1")
	for mode, want := range map[grade.CodeTests]grade.Status{grade.TestsAll: grade.Fail, grade.TestsCases: grade.Pass, grade.TestsCheck: grade.Fail} {
		res := gradeCode(t, execGrader(grade.Options{CodeTests: mode}), in, answer)
		if res.Status != want {
			t.Errorf("tests %s: %s (%s); want %s", mode, res.Status, res.Reason, want)
		}
	}
}

func TestCodeStdinAndPrivateCases(t *testing.T) {
	needPython(t)
	// LiveCodeBench ships private cases as base64(zlib(pickle(json))).
	out, err := exec.Command("python3", "-c", `import base64, json, pickle, zlib
print(base64.b64encode(zlib.compress(pickle.dumps(json.dumps([{"input": "4 5\n", "output": "9\n", "testtype": "stdin"}])))).decode())`).Output()
	if err != nil {
		t.Fatal(err)
	}
	in := &grade.Instance{TaskID: "lcb", Task: grade.TaskCode,
		PublicTestCases:  grade.JSONText(`[{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]`),
		PrivateTestCases: strings.TrimSpace(string(out))}
	g := execGrader(grade.Options{})
	right := pyAnswer("def main():\n    a, b = map(int, input().split())\n    print(a + b)\n\nif __name__ == '__main__':\n    main()")
	if res := gradeCode(t, g, in, right); res.Status != grade.Pass || !strings.Contains(res.Reason, "2 test case(s)") {
		t.Errorf("right: %s (%s)", res.Status, res.Reason)
	}
	wrong := pyAnswer("def main():\n    a, b = map(int, input().split())\n    print(a * b)\n\nmain()")
	if res := gradeCode(t, g, in, wrong); res.Status != grade.Fail {
		t.Errorf("wrong: %s (%s)", res.Status, res.Reason)
	}
}

func TestCodeOffByDefault(t *testing.T) {
	in := byID(t, grade.TaskCode, "sharded-HumanEval/106")
	res, err := grade.New(grade.Options{}).Grade(context.Background(), in, pyAnswer(readSolution(t, "HumanEval_106.py")))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != grade.NotGraded || !strings.Contains(res.Reason, "code execution is off") || !strings.Contains(res.Artifact, "def f(n)") {
		t.Fatalf("got %+v; want not graded, with the code as artifact", res)
	}
}

func TestCodeNoPython(t *testing.T) {
	in := byID(t, grade.TaskCode, "sharded-HumanEval/106")
	_, err := grade.New(grade.Options{AllowExec: true, Python: filepath.Join(t.TempDir(), "python3")}).Grade(context.Background(), in, pyAnswer("def f(n):\n    return []"))
	if !errors.Is(err, grade.ErrNoPython) {
		t.Fatalf("err = %v; want ErrNoPython", err)
	}
}

func TestCodeBadInstance(t *testing.T) {
	in := &grade.Instance{TaskID: "none", Task: grade.TaskCode}
	if _, err := grade.New(grade.Options{AllowExec: true}).Grade(context.Background(), in, pyAnswer("def f():\n    pass")); !errors.Is(err, grade.ErrBadInstance) {
		t.Fatalf("err = %v; want ErrBadInstance", err)
	}
}

// custom returns an instance whose check calls candidate() with no
// arguments, for sandbox probes.
func custom(check string) *grade.Instance {
	in := &grade.Instance{TaskID: "sandbox", Task: grade.TaskCode, Test: "def check(candidate):\n" + check}
	in.Metadata.FuncName = "probe"
	return in
}

func TestSandboxTimeLimit(t *testing.T) {
	needPython(t)
	g := execGrader(grade.Options{ExecTimeout: 3 * time.Second})
	// the loop never ends, so the outcome does not depend on timing
	res := gradeCode(t, g, custom("    candidate()\n"), pyAnswer("def probe():\n    while True:\n        pass"))
	if res.Status != grade.Fail || !(strings.Contains(res.Reason, "out of time") || strings.Contains(res.Reason, "time limit")) {
		t.Errorf("got %s (%s); want a time-limit fail", res.Status, res.Reason)
	}
}

func TestSandboxMemoryLimit(t *testing.T) {
	needPython(t)
	g := execGrader(grade.Options{ExecMemory: 256 << 20})
	res := gradeCode(t, g, custom("    assert candidate() > 0\n"), pyAnswer("def probe():\n    return len(bytearray(2 << 30))"))
	if res.Status != grade.Fail || !strings.Contains(res.Reason, "memory") {
		t.Errorf("got %s (%s); want an out-of-memory fail", res.Status, res.Reason)
	}
}

func TestSandboxNoNetwork(t *testing.T) {
	needPython(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no local listener: %v", err)
	}
	defer ln.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	code := fmt.Sprintf("import socket\ndef probe():\n    try:\n        socket.create_connection(('127.0.0.1', %d), timeout=5).close()\n        return 'connected'\n    except OSError as e:\n        return 'refused'", port)
	graders := []*grade.Grader{execGrader(grade.Options{})}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		// the system interpreter can also run as an unprivileged user
		graders = append(graders, execGrader(grade.Options{Python: "/usr/bin/python3"}))
	}
	for _, g := range graders {
		res := gradeCode(t, g, custom("    assert candidate() == 'refused'\n"), pyAnswer(code))
		if res.Status != grade.Pass {
			t.Errorf("the code reached the network: %s (%s)", res.Status, res.Reason)
		}
		t.Logf("isolation: %s", res.Check)
	}
	ln.Close()
	if <-accepted {
		t.Error("the listener accepted a connection from the sandbox")
	}
}

func TestSandboxEnvironmentAndDirectory(t *testing.T) {
	needPython(t)
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "ac3-grade-code-*"))
	code := "import os\ndef probe():\n    open('scratch.txt', 'w').write('x')\n    return os.environ.get('OPENAI_API_KEY'), os.path.exists('scratch.txt'), os.getcwd() == os.environ['HOME']"
	res := gradeCode(t, execGrader(grade.Options{}), custom("    assert candidate() == (None, True, True)\n"), pyAnswer(code))
	if res.Status != grade.Pass {
		t.Errorf("got %s (%s)", res.Status, res.Reason)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "ac3-grade-code-*"))
	if len(after) > len(before) {
		t.Errorf("the sandbox directory was left behind: %v", after)
	}
}

// TestSandboxNoProcesses checks that the answer cannot start processes
// when the sandbox runs it as an unprivileged user (the process limit does
// not bind root).
func TestSandboxNoProcesses(t *testing.T) {
	needPython(t)
	g := execGrader(grade.Options{Python: "/usr/bin/python3"})
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		g = execGrader(grade.Options{})
	}
	code := "import subprocess\ndef probe():\n    try:\n        subprocess.run(['true'])\n        return 'started'\n    except OSError:\n        return 'refused'"
	res := gradeCode(t, g, custom("    assert candidate() == 'refused'\n"), pyAnswer(code))
	if os.Geteuid() == 0 && !strings.Contains(res.Check, "runs as uid") {
		t.Skipf("the sandbox runs as root here (%s): the process limit does not apply", res.Check)
	}
	if res.Status != grade.Pass {
		t.Errorf("the code started a process: %s (%s); sandbox %s", res.Status, res.Reason, res.Check)
	}
}

func TestExtractCode(t *testing.T) {
	tests := []struct {
		name, in, want, how string
	}{
		{"python block", "x\n```python\ndef f():\n    return 1\n```\n", "def f():\n    return 1", grade.ExtractedPythonFence},
		{"unlabelled block", "```\ndef f():\n    pass\n```", "def f():\n    pass", grade.ExtractedPythonFence},
		{"other language block", "```js\nclass A {}\n```", "class A {}", grade.ExtractedAnyFence},
		{"block without definitions", "```python\nprint(1)\n```", "", ""},
		{"bare code ends at prose", "Try this:\nimport math\n\ndef f(x):\n    return math.sqrt(x)\n\nIt works.", "import math\n\ndef f(x):\n    return math.sqrt(x)", grade.ExtractedBareCode},
		{"bare code keeps decorators and constants", "def f():\n    return K\nK = 3\n@cache\ndef g():\n    pass", "def f():\n    return K\nK = 3\n@cache\ndef g():\n    pass", grade.ExtractedBareCode},
		{"prose only", "What should f return?", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how := grade.ExtractCode(tt.in)
			if got != tt.want || how != tt.how {
				t.Errorf("ExtractCode = %q by %q; want %q by %q", got, how, tt.want, tt.how)
			}
		})
	}
}

func FuzzExtractCode(f *testing.F) {
	for _, s := range []string{"```python\ndef f():\n  pass\n```", "def f():\n\treturn 1\nok", "```\nclass", "import x\nfrom y import z\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, how := grade.ExtractCode(s)
		if (code == "") != (how == "") {
			t.Fatalf("code %q with rule %q", code, how)
		}
	})
}
