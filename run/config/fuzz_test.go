package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: any bytes as a config file end in a config or an error, never
// a panic, through Load's checks and the section readers of Plan.
func FuzzLoad(f *testing.F) {
	paths, err := filepath.Glob("../../fixtures/configs/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"run: {db: x.db}\nstages:\n  judge: [fc]\n",
		"run: {db: x.db}\nstages: {curate: {strategies: fc, gated_reset: {floor: x}}}\n",
		"a: &a {db: x}\nrun: *a\n",
		"run: {<<: {db: x.db}}\nreport: {bootstrap: 3}\n",
		"- 1\n- 2\n",
		"",
	} {
		f.Add([]byte(s))
	}
	env := func(string) string { return "" }
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := load(raw, "fuzz.yaml", env)
		if err != nil {
			return
		}
		_, _, _ = cfg.Plan(env)
	})
}
