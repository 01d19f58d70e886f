package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ac3/ac3/pipeline/llm"
)

func TestBatchConfig(t *testing.T) {
	base := `run: {db: run.db}
endpoints:
  e: {base_url: http://x/v1, mode: %EP%}
models:
  m: {endpoint: e, price: {input: 1, output: 2, batch: %SHARE%}}
roles:
  judge: {model: m, mode: %ROLE%}
batch: {%BATCH%}
`
	tests := []struct {
		name, ep, role, share, batch, err string
	}{
		{name: "batch endpoint", ep: "batch", role: "online", share: "0.4", batch: "fallback: online, poll: 5s, max_mb: 10, max_requests: 7, max_submits: 2"},
		{name: "defaults", ep: "online", role: "batch", share: "0", batch: ""},
		{name: "bad mode", ep: "offline", role: "online", share: "0", err: "endpoints.e.mode"},
		{name: "bad role mode", ep: "online", role: "later", share: "0", err: "roles.judge.mode"},
		{name: "bad fallback", ep: "batch", role: "batch", share: "0", batch: "fallback: never", err: "batch.fallback"},
		{name: "bad poll", ep: "batch", role: "batch", share: "0", batch: "poll: soon", err: "batch.poll"},
		{name: "bad share", ep: "batch", role: "batch", share: "2", err: "price.batch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.NewReplacer("%EP%", tc.ep, "%ROLE%", tc.role, "%SHARE%", tc.share, "%BATCH%", tc.batch).Replace(base)
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path, func(string) string { return "" })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Load: %v, want an error naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := WithBatch(Model(cfg, func(string) string { return "" }, false, 0), false)
			ep := m.Options.Endpoints[0]
			if (ep.Mode == llm.ModeBatch) != (tc.ep == "batch") || (m.Options.Roles["judge"].Mode == llm.ModeBatch) != (tc.role == "batch") {
				t.Errorf("modes: endpoint %q, role %q", ep.Mode, m.Options.Roles["judge"].Mode)
			}
			if tc.name == "batch endpoint" {
				b := m.Batch
				if ep.Price.Batch != 0.4 || b.Fallback != "online" || b.Poll != 5*time.Second || b.MaxBytes != 10<<20 || b.MaxRequests != 7 || b.MaxSubmits != 2 || b.All {
					t.Errorf("settings %+v, price %+v", b, ep.Price)
				}
				if !WithBatch(m, true).Batch.All {
					t.Error("--batch not applied")
				}
			}
		})
	}
}
