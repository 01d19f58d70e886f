package parquetio_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ac3/ac3/io/parquetio"
)

// TestFixtures rebuilds the committed fixtures in fixtures/columnar and
// checks they are unchanged, which also shows the writers are deterministic
// across runs. With -update it rewrites them:
//
//	go test ./io/parquetio -run TestFixtures -update
func TestFixtures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(testing.TB) []byte
	}{
		{"canonical.parquet", func(tb testing.TB) []byte {
			return writeConversations(tb, sampleConversations(), parquetio.WriterOptions{})
		}},
		{"wildchat-sample5.parquet", func(tb testing.TB) []byte {
			return buildWildChatParquet(tb, readWildChatLines(tb, wildchatFixtureRows))
		}},
		{"wildchat-bad.parquet", func(tb testing.TB) []byte { return buildBadWildChatParquet(tb) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.build(t)
			path := filepath.Join(fixtureDir, tc.name)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale or the writer is not deterministic (run with -update if the change is intended)", tc.name)
			}
		})
	}
}
