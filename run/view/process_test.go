package view

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCommandBesideAWriter runs 'ac3 view' as its own process on a run
// that another 'ac3' process is curating: the writer finishes normally,
// the view answers all along and then lists the new strategy's contexts.
// It needs the binary (AC3_TEST_BIN, as CI builds it).
func TestCommandBesideAWriter(t *testing.T) {
	bin := os.Getenv("AC3_TEST_BIN")
	if bin == "" {
		t.Skip("AC3_TEST_BIN is not set (go build -o /tmp/ac3 ./cmd/ac3 && AC3_TEST_BIN=/tmp/ac3 go test ...)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := copyRun(t)

	// Anywhere but loopback is refused without --expose.
	out, err := exec.CommandContext(ctx, bin, "view", "--db", path, "--addr", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--expose") {
		t.Errorf("view on 0.0.0.0 without --expose: %v\n%s", err, out)
	}

	view := exec.CommandContext(ctx, bin, "view", "--db", path, "--addr", "127.0.0.1:0")
	stdout, err := view.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	view.Stderr = os.Stderr
	if err := view.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		view.Process.Signal(os.Interrupt)
		view.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the view's first line: %v", err)
	}
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	if base == "" {
		t.Fatalf("the view printed %q", line)
	}
	fetch := func(p string) string {
		resp, err := http.Get(base + strings.TrimPrefix(p, "/"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", p, resp.StatusCode, b)
		}
		return string(b)
	}
	if strings.Contains(fetch("/"), "de</td>") {
		t.Fatal("de was curated before the test curated it")
	}
	writer := exec.CommandContext(ctx, bin, "curate", "--db", path, "--strategies", "fc,ao,lt,de")
	var wout strings.Builder
	writer.Stdout, writer.Stderr = &wout, &wout
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() { werr <- writer.Wait() }()
	reads := 0
	for done := false; !done; {
		select {
		case err := <-werr:
			if err != nil {
				t.Fatalf("curate beside the view: %v\n%s", err, wout.String())
			}
			done = true
		default:
			fetch("/")
			fetch("/conversations?type=feedback")
			reads++
		}
	}
	if !strings.Contains(fetch("/"), "<td>de</td>") {
		t.Error("the run page does not show de after curate wrote it")
	}
	ids, _ := listed(t, fetch("/conversations?done=curate"))
	if len(ids) == 0 {
		t.Error("no curated conversation listed")
	}
	t.Logf("%d rounds of reads while curate wrote", reads)
}
