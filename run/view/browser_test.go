package view

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/run/report"
)

// chromium finds Debian's chromium (or another build's name for it).
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test")
	}
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (apt-get install -y --no-install-recommends chromium)")
	return ""
}

// artifacts is where screenshots go: $AC3_ARTIFACTS/view when set (CI
// keeps it), else the test's temporary folder.
func artifacts(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("AC3_ARTIFACTS"); d != "" {
		dir := filepath.Join(d, "view")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// consoleRe matches what chromium logs to stderr for a console message or
// an uncaught error: level 1 and above (warnings, errors).
var consoleRe = regexp.MustCompile(`(?m)^.*(?:CONSOLE|console).*$`)

type browser struct {
	t       *testing.T
	bin     string
	profile string
	shots   string
	base    string
}

// load renders url in headless chromium at 1280 px and returns the DOM
// after scripts ran; it saves a screenshot named shot and fails the test
// on any console message at warning level or above.
func (b *browser) load(path, shot string) string {
	return b.loadTall(path, shot, 1600)
}

// loadTall is load with a window height of its own, for a page whose
// point is below the first screenful.
func (b *browser) loadTall(path, shot string, height int) string {
	b.t.Helper()
	run := func(extra ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
			"--user-data-dir=" + b.profile, fmt.Sprintf("--window-size=1280,%d", height), "--enable-logging=stderr", "--v=0"}, extra...)
		args = append(args, b.base+path)
		cmd := exec.CommandContext(ctx, b.bin, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			b.t.Fatalf("chromium %s: %v\n%s", path, err, errb.String())
		}
		return out.String(), errb.String()
	}
	png := filepath.Join(b.shots, shot+".png")
	dom, stderr := run("--dump-dom", "--screenshot="+png)
	for i, l := range consoleRe.FindAllString(stderr, -1) {
		if i == 3 {
			b.t.Errorf("and more console messages on %s", path)
			break
		}
		b.t.Errorf("console message on %s: %s", path, l)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 20_000 {
		b.t.Errorf("screenshot %s missing or blank: %v", png, err)
	}
	return dom
}

// TestInChromium walks the pages as a person would: the run page, the
// list with two filters from the URL, a conversation from it, another
// pair of strategies through the page's own link, the verdicts and the
// quarantine. It asserts on the DOM chromium built and fails on console
// errors; the screenshots are kept as artifacts.
func TestInChromium(t *testing.T) {
	bin := chromium(t)
	l := reader(t)
	h, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	b := &browser{t: t, bin: bin, profile: t.TempDir(), shots: artifacts(t), base: srv.URL}

	dom := b.load("/", "1-run")
	contains(t, "the run page", dom, `id="kept"`, `id="stages"`, "wildchat_mixed.jsonl", `id="live"`)

	dom = b.load("/conversations?type=feedback&turns_min=3", "2-filtered")
	contains(t, "the filtered list", dom, `id="conversations"`, "type: feedback", "turns_min: 3")
	ids, _ := listed(t, dom)
	if len(ids) == 0 {
		t.Fatal("the filtered list is empty")
	}

	dom = b.load("/conversations?pair=fc:ao&verdict=b", "3-judged")
	ids, _ = listed(t, dom)
	if len(ids) == 0 {
		t.Fatal("no conversation where ao won")
	}
	dom = b.loadTall(fmt.Sprintf("/conversation/%s?turn=3", ids[0]), "4-conversation", 4800)
	contains(t, "the conversation", dom, `class="turn focus" id="turn-3"`, `<div class="ctx" data-strategy="fc"`, `<div class="ctx" data-strategy="ao"`, "Judge verdicts", "[ao] answer to turn 3")

	// Switch strategies with the page's own link: add lt.
	m := regexp.MustCompile(`<a class="chip" href="([^"]+)" data-strategy="lt">`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("no link to show lt's context")
	}
	// Without its #turn-3: headless chromium paints a page it scrolled to
	// a fragment as blank above the fold.
	next, _, _ := strings.Cut(strings.ReplaceAll(m[1], "&amp;", "&"), "#")
	dom = b.loadTall(next, "5-strategies", 4800)
	contains(t, "after adding lt", dom, `<div class="ctx" data-strategy="lt"`, `<div class="ctx" data-strategy="fc"`, `class="chip on" href=`)

	dom = b.load("/verdicts?pair=fc:ao&dim=quality", "6-verdicts")
	contains(t, "the verdicts", dom, `id="verdicts"`, "the winner kept the user")

	dom = b.load("/quarantine", "7-quarantine")
	contains(t, "the quarantine", dom, `id="quarantine"`, "wildchat_mixed.jsonl")

	// From the report: its first link to a pair's verdicts, pointed at
	// this server, opens them.
	rep, err := report.Build(testCtx(t), l, report.Options{Seed: 1, Resamples: 50, ViewBase: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := report.Write(dir, rep, []string{"html"}); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`href="` + regexp.QuoteMeta(srv.URL) + `(/verdicts\?[^"]+)"`).FindSubmatch(html)
	if link == nil {
		t.Fatal("report.html has no link to the verdicts in the view")
	}
	dom = b.load(strings.ReplaceAll(string(link[1]), "&amp;", "&"), "8-from-report")
	contains(t, "the report's link", dom, `id="verdicts"`, "fc:ao")

	dom = b.load("/conversation/markup-1", "9-markup")
	if strings.Contains(dom, "<b>bold</b>") {
		t.Error("markup in a conversation was rendered as markup")
	}
	t.Logf("screenshots in %s", b.shots)
}
