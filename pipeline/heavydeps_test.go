package pipeline_test

import (
	"os/exec"
	"strings"
	"testing"
)

// heavy lists packages that must not be linked into the ac3 binary. Arrow's
// pqarrow brings in its compute kernels and Flight, and Flight gRPC and
// protobuf: about 23 MB of a 63 MB binary, for the Arrow–Parquet mapping
// that io/parquetio now does itself. Tests may still import pqarrow (the
// parquetio tests compare against it); the binary may not. .ci/run checks
// the size of the binary itself; this says which import broke it.
var heavy = []string{
	"github.com/apache/arrow/go/v17/parquet/pqarrow",
	"github.com/apache/arrow/go/v17/arrow/flight",
	"github.com/apache/arrow/go/v17/arrow/compute",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
}

// TestBinaryLeavesOutHeavyPackages fails if the ac3 command depends,
// directly or not, on a package in heavy.
func TestBinaryLeavesOutHeavyPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/ac3/ac3/cmd/ac3").Output()
	if err != nil {
		t.Fatalf("listing the dependencies of cmd/ac3: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, h := range heavy {
			if dep == h || strings.HasPrefix(dep, h+"/") {
				t.Errorf("cmd/ac3 depends on %s; find the import with `go mod why -m` or `go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/ac3`", dep)
			}
		}
	}
}
