package pipeline_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyArrows keeps the layering honest: the domain package imports
// only the standard library, stages never import readers/writers or the
// CLI, and nothing imports the CLI.
func TestDependencyArrows(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", "github.com/ac3/ac3/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	dec := json.NewDecoder(out)
	const mod = "github.com/ac3/ac3/"
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, mod)
		for _, imp := range p.Imports {
			irel, ours := strings.CutPrefix(imp, mod)
			switch {
			case rel == "pipeline/conv" && (ours || strings.Contains(imp, ".")):
				t.Errorf("pipeline/conv imports %s; it must use the standard library only", imp)
			case strings.HasPrefix(rel, "stages/") && ours && (strings.HasPrefix(irel, "io/") || strings.HasPrefix(irel, "cmd/")):
				t.Errorf("%s imports %s; stages must not depend on formats or the CLI", rel, irel)
			case ours && strings.HasPrefix(irel, "cmd/"):
				t.Errorf("%s imports the CLI package %s", rel, irel)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
