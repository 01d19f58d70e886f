package report_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ac3/ac3/run/report"
)

// TestReportRendersInChromium renders report.html with headless Chromium
// through scripts/report-screenshot.sh and checks a screenshot came out.
// It is skipped where no chromium is installed (the script itself can
// install one; a test never does, as tests stay off the network).
func TestReportRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check")
	}
	found := false
	for _, b := range []string{"chromium", "chromium-browser"} {
		if _, err := exec.LookPath(b); err == nil {
			found = true
		}
	}
	if !found {
		t.Skip("chromium not installed (apt-get install -y chromium, or run scripts/report-screenshot.sh)")
	}
	r, err := report.Build(context.Background(), fixedRun(t), report.Options{Seed: 11, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := report.Write(dir, r, []string{"html"}); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "../../scripts/report-screenshot.sh", filepath.Join(dir, "report.html"), png).CombinedOutput()
	if err != nil {
		t.Fatalf("screenshot: %v\n%s", err, out)
	}
	st, err := os.Stat(png)
	if err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot missing or blank: %v %v\n%s", st, err, out)
	}
}
