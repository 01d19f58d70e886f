package grade_test

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/ac3/ac3/io/lic"
	"github.com/ac3/ac3/stages/lic/grade"
)

// TestThroughTheReader checks the path the stage takes: io/lic keeps every
// field but the shards in Conversation.Meta, and ParseInstance reads the
// grading fields back from it.
func TestThroughTheReader(t *testing.T) {
	f, err := os.Open(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := lic.NewReader(f, "sample_5_per_task.json")
	g := grade.New(grade.Options{})
	graded := map[string]int{}
	for {
		rec, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Conv == nil {
			t.Fatalf("quarantined: %+v", rec.Bad)
		}
		in, err := grade.ParseInstance(rec.Conv.Meta)
		if err != nil {
			t.Fatal(err)
		}
		if in.TaskID != rec.Conv.ID {
			t.Errorf("task_id %q, conversation id %q", in.TaskID, rec.Conv.ID)
		}
		var answer string
		switch in.Task {
		case grade.TaskMath:
			answer = in.Answer
		case grade.TaskDatabase:
			answer = sqlAnswer(in.ReferenceSQL)
		case grade.TaskActions:
			refs, err := grade.ParseReference(in.ReferenceAnswer)
			if err != nil {
				t.Fatal(err)
			}
			answer = grade.RenderReference(refs)
		default:
			res, err := g.Grade(context.Background(), in, "anything")
			if err != nil || res.Status != grade.NotGraded {
				t.Errorf("%s (%s): %+v, %v; want not graded", in.TaskID, in.Task, res, err)
			}
			continue
		}
		res, err := g.Grade(context.Background(), in, answer)
		if err != nil || res.Status != grade.Pass {
			t.Errorf("%s: reference graded %+v, %v", in.TaskID, res, err)
		}
		graded[in.Task]++
	}
	for _, task := range []string{grade.TaskMath, grade.TaskDatabase, grade.TaskActions} {
		if graded[task] != 5 {
			t.Errorf("%d %s instances graded; want 5", graded[task], task)
		}
	}
}
