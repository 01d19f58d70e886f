package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/stages/curate"
)

func TestCurateCompactorKeys(t *testing.T) {
	path := writeConfig(t, "x.db", `  curate:
    strategies: [recent-n, llm-compact, llm-compact=pi, extract-sc=plugin=lingua, plugin=remote]
    recent_n: {n: 20}
    llm_compact:
      prompt_file: mine.txt
      history: messages
      role: compactor
      prompts: {pi: pi.txt}
    plugins:
      lingua: {command: [./lingua.sh, --budget, "500"], timeout: 90s, settings: {target_token: 500}, version: "2"}
      remote: {url: "http://127.0.0.1:8400/compact", retries: 4}`)
	dir := filepath.Dir(path)
	for name, text := range map[string]string{"mine.txt": "Summarize the conversation above.", "pi.txt": "{{define \"system\"}}You summarize.{{end}}{{define \"user\"}}Summarize.{{end}}"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cu, err := configFrom(t, path).Curate()
	if err != nil {
		t.Fatal(err)
	}
	co := cu.AC3.Compact
	if co.RecentN != 20 || co.History != curate.HistoryMessages || co.Role != "compactor" || co.Prompt == nil || co.Prompt.File() != filepath.Join(dir, "mine.txt") ||
		co.Prompts["pi"] == nil || len(co.Plugins) != 2 {
		t.Errorf("compactor settings: %+v", co)
	}
	lingua := co.Plugins["lingua"]
	if lingua.Command[0] != filepath.Join(dir, "lingua.sh") || lingua.Command[2] != "500" || lingua.Dir != dir || lingua.Timeout != 90*time.Second ||
		lingua.Settings["target_token"] != 500 || lingua.Version != "2" {
		t.Errorf("lingua: %+v", lingua)
	}
	if r := co.Plugins["remote"]; r.URL != "http://127.0.0.1:8400/compact" || r.Retries != 4 {
		t.Errorf("remote: %+v", r)
	}
	// The settings reach the strategies.
	st, err := curate.ByName("recent-n", curate.Options{Compact: co})
	if err != nil || st.Version() != "recent-n1;n=20" {
		t.Errorf("recent-n: %v %v", st, err)
	}

	for key, body := range map[string]string{
		"stages.curate.recent_n.n":              "recent_n: {n: 0}",
		"stages.curate.recent_n.m":              "recent_n: {m: 3}",
		"stages.curate.llm_compact.history":     "llm_compact: {history: inline}",
		"stages.curate.llm_compact.prompt_file": "llm_compact: {prompt_file: missing.txt}",
		"stages.curate.llm_compact.prompts.a+b": "llm_compact: {prompts: {a+b: x.txt}}",
		"stages.curate.plugins.x":               "plugins: {x: {}}",
		"stages.curate.plugins.y.timeout":       "plugins: {y: {url: http://h, timeout: -1s}}",
		"stages.curate.plugins.z.cmd":           "plugins: {z: {cmd: [a]}}",
		"stages.curate.plugins.a:b":             "plugins: {\"a:b\": {url: http://h}}",
	} {
		cfg, err := Load(writeConfig(t, "x.db", "  curate:\n    strategies: [fc]\n    "+body), func(string) string { return "" })
		if err == nil {
			_, err = cfg.Curate()
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v, want one naming %s", body, err, key)
		}
	}
}
