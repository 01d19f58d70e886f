package grade

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSocketFallback forces the weaker set-up used where no network
// namespace can be made, and checks that Python's sockets refuse to
// connect and the result says the isolation is weaker.
func TestSocketFallback(t *testing.T) {
	path, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: the code grader's tests run model code with it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no local listener: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	g := New(Options{AllowExec: true, ExecTimeout: 2 * time.Minute})
	g.box.once.Do(func() { g.box.iso = isolation{python: path} })
	in := &Instance{TaskID: "fallback", Task: TaskCode, Test: "def check(candidate):\n    assert candidate() == 'refused'\n"}
	in.Metadata.FuncName = "probe"
	code := fmt.Sprintf("import socket\ndef probe():\n    try:\n        socket.create_connection(('127.0.0.1', %d), timeout=5).close()\n        return 'connected'\n    except OSError:\n        return 'refused'", ln.Addr().(*net.TCPAddr).Port)
	res, err := g.Grade(context.Background(), in, "```python\n"+code+"\n```")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Pass {
		t.Errorf("the socket block let a connection through: %s (%s)", res.Status, res.Reason)
	}
	if !strings.Contains(res.Check, "weaker") {
		t.Errorf("check %q does not say the isolation is weaker", res.Check)
	}
}
