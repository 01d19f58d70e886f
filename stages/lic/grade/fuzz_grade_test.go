package grade_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/ac3/ac3/stages/lic/grade"
)

// FuzzGrade feeds arbitrary instances and answers to the graders (code
// execution off): whatever the data, grading returns a result or an
// instance error, never panics.
func FuzzGrade(f *testing.F) {
	raw, err := os.ReadFile(samplePath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(raw[:0]), "")
	for _, task := range []string{grade.TaskMath, grade.TaskDatabase, grade.TaskActions, grade.TaskCode} {
		for _, in := range sample(f, task)[:1] {
			b, _ := jsonMarshal(in)
			f.Add(string(b), "Final answer: 3\n```sql\nSELECT 1\n```\n[f(a=1)]")
		}
	}
	f.Add(`{"task":"database","task_id":"x","reference_sql":"SELECT a FROM t ORDER BY a","schema_sql":"CREATE TABLE t (a INT, b TEXT)"}`, "```sql\nSELECT a FROM t WHERE b LIKE '%x_' ORDER BY a\n```")
	f.Add(`{"task":"actions","task_id":"x","function":{"name":"f","parameters":{"properties":{"a":{"type":"array","items":{"type":"dict"}}}}},"reference_answer":[{"f":{"a":[[{"k":[1]}]]}}]}`, `f(a=[{"k": 1}])`)
	g := grade.New(grade.Options{Fillings: 2, QueryTimeout: time.Second})
	f.Fuzz(func(t *testing.T, rawInstance, answer string) {
		in, err := grade.ParseInstance([]byte(rawInstance))
		if err != nil {
			return
		}
		res, err := g.Grade(context.Background(), in, answer)
		if err != nil {
			if !errors.Is(err, grade.ErrBadInstance) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		switch res.Status {
		case grade.Pass, grade.Fail, grade.NotGraded:
		default:
			t.Fatalf("status %q", res.Status)
		}
		if res.Reason == "" {
			t.Fatalf("a result without a reason: %+v", res)
		}
	})
}
