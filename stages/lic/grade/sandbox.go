package grade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// sandbox starts the code runner. How well it can isolate the run depends
// on the machine, so it finds out once, on first use, and keeps the
// answer.
type sandbox struct {
	opts Options
	once sync.Once
	iso  isolation
	err  error
}

func newSandbox(opts Options) *sandbox { return &sandbox{opts: opts} }

// isolation is what the sandbox can do on this machine.
type isolation struct {
	python   string // resolved interpreter path
	netns    bool   // the run gets its own, empty network namespace
	userns   bool   // made through a user namespace (grader not root)
	dropUser bool   // the grader is root: the run uses uid/gid nobodyID
}

// nobodyID is the user and group the runner runs as when the grader is
// root (65534, "nobody" on most systems).
const nobodyID = 65534

// isolation probes the machine once: the interpreter must exist, and a
// run in a private network namespace is tried.
func (b *sandbox) isolation(ctx context.Context) (isolation, error) {
	b.once.Do(func() {
		path, err := exec.LookPath(b.opts.Python)
		if err != nil {
			b.err = fmt.Errorf("%w (%v)", ErrNoPython, err)
			return
		}
		// Version managers put a shell script on PATH; the sandbox needs the
		// interpreter itself, which may live where the script could not.
		out, err := exec.CommandContext(ctx, path, "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			b.err = fmt.Errorf("%w (running %s: %v)", ErrNoPython, path, err)
			return
		}
		if exe := strings.TrimSpace(string(out)); exe != "" {
			path = exe
		}
		b.iso = probeIsolation(ctx, path)
	})
	return b.iso, b.err
}

func (iso isolation) describe() string {
	s := ""
	switch {
	case iso.netns && iso.userns:
		s = "no network (private network namespace, via a user namespace)"
	case iso.netns:
		s = "no network (private network namespace)"
	default:
		s = "network blocked in Python only (no namespace available; weaker)"
	}
	switch {
	case iso.dropUser:
		s += fmt.Sprintf(", runs as uid %d", nobodyID)
	case os.Geteuid() == 0:
		s += fmt.Sprintf(", runs as root (uid %d cannot run %s; set the interpreter to one it can)", nobodyID, iso.python)
	}
	return s
}
