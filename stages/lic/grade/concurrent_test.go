package grade_test

import (
	"context"
	"sync"
	"testing"

	"github.com/ac3/ac3/stages/lic/grade"
)

// TestConcurrentGrading shares one Grader between workers, as the stage's
// pool does; run with -race.
func TestConcurrentGrading(t *testing.T) {
	g := grade.New(grade.Options{})
	var jobs []struct {
		in     *grade.Instance
		answer string
	}
	for _, in := range sample(t, grade.TaskDatabase) {
		jobs = append(jobs, struct {
			in     *grade.Instance
			answer string
		}{in, sqlAnswer(in.ReferenceSQL)})
	}
	for _, in := range sample(t, grade.TaskMath) {
		jobs = append(jobs, struct {
			in     *grade.Instance
			answer string
		}{in, in.Answer})
	}
	want := make([]grade.Result, len(jobs))
	for i, j := range jobs {
		want[i] = gradeOK(t, g, j.in, j.answer)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(jobs))
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, j := range jobs {
				res, err := g.Grade(context.Background(), j.in, j.answer)
				if err != nil || res != want[i] {
					errs <- j.in.TaskID
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for id := range errs {
		t.Errorf("%s graded differently under concurrency", id)
	}
}
