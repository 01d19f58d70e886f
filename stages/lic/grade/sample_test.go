package grade_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/ac3/ac3/stages/lic/grade"
)

// samplePath is the real LiC sample shipped with the repository (see
// fixtures/README.md for its origin).
const samplePath = "../../../fixtures/lic/sample_5_per_task.json"

// sample returns the sample's instances of one task, in file order.
func sample(tb testing.TB, task string) []*grade.Instance {
	tb.Helper()
	raw, err := os.ReadFile(samplePath)
	if err != nil {
		tb.Fatal(err)
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(raw, &recs); err != nil {
		tb.Fatal(err)
	}
	var out []*grade.Instance
	for _, r := range recs {
		in, err := grade.ParseInstance(r)
		if err != nil {
			tb.Fatal(err)
		}
		if in.Task == task {
			out = append(out, in)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("the sample has no %s instances", task)
	}
	return out
}

// byID returns the sample instance with the given task_id.
func byID(tb testing.TB, task, id string) *grade.Instance {
	tb.Helper()
	for _, in := range sample(tb, task) {
		if in.TaskID == id {
			return in
		}
	}
	tb.Fatalf("no %s instance %s in the sample", task, id)
	return nil
}
