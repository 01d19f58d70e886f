package simulate_test

import (
	"testing"

	"github.com/ac3/ac3/stages/lic/grade"
	"github.com/ac3/ac3/stages/lic/simulate"
)

// The false-negative check compares the user's messages with the task's
// single-turn question, which LiC stores under a different name per task.
func TestOriginalReadsEachTasksQuestion(t *testing.T) {
	shards := []string{"first piece", "second piece"}
	for _, c := range []struct{ name, record, want string }{
		{"math", `{"task": "math", "question": "How many apples?"}`, "How many apples?"},
		{"database", `{"task": "database", "fully_specified_question": "List every singer older than 30."}`, "List every singer older than 30."},
		{"actions", `{"task": "actions", "fully_specified_question": [[{"role": "system", "content": "x"}, {"role": "user", "content": "Book a table for two."}], [{"role": "user", "content": "At eight."}]]}`, "Book a table for two.\n\nAt eight."},
		{"odd shape", `{"task": "actions", "fully_specified_question": {"n": 1}, "prompt": "p"}`, "p"},
		{"code", `{"task": "code", "prompt": "def f(x):\n    pass"}`, "def f(x):\n    pass"},
		{"none", `{"task": "summary"}`, "first piece\nsecond piece"},
	} {
		in, err := grade.ParseInstance([]byte(c.record))
		if err != nil {
			t.Fatal(err)
		}
		if got := simulate.Original(in, shards); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
