package grade_test

import (
	"context"
	"testing"
	"time"

	"github.com/ac3/ac3/stages/lic/grade"
)

// BenchmarkGradeDatabase grades the sample's hardest query against
// itself: building the schema, 8 fillings, and running both queries on
// each.
func BenchmarkGradeDatabase(b *testing.B) {
	in := byID(b, grade.TaskDatabase, "sharded-spider-val-53-hard")
	g := grade.New(grade.Options{})
	answer := sqlAnswer(in.ReferenceSQL)
	for b.Loop() {
		if res, err := g.Grade(context.Background(), in, answer); err != nil || res.Status != grade.Pass {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkGradeDatabaseWrong grades a wrong query, which also tries the
// value-plugged variants before failing: the slow path.
func BenchmarkGradeDatabaseWrong(b *testing.B) {
	in := byID(b, grade.TaskDatabase, "sharded-spider-val-53-hard")
	g := grade.New(grade.Options{})
	answer := sqlAnswer("SELECT count(*) FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid WHERE T1.sex = 'M' AND T1.age > 20")
	for b.Loop() {
		if res, err := g.Grade(context.Background(), in, answer); err != nil || res.Status != grade.Fail {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkGradeActions(b *testing.B) {
	in := byID(b, grade.TaskActions, "sharded-BFCL/parallel_156")
	refs, err := grade.ParseReference(in.ReferenceAnswer)
	if err != nil {
		b.Fatal(err)
	}
	answer := "```python\n" + grade.RenderReference(refs) + "\n```"
	g := grade.New(grade.Options{})
	for b.Loop() {
		if res, err := g.Grade(context.Background(), in, answer); err != nil || res.Status != grade.Pass {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkGradeMath(b *testing.B) {
	in := byID(b, grade.TaskMath, "sharded-GSM8K/1190")
	g := grade.New(grade.Options{})
	answer := in.Answer + "\n\n" + grade.AnswerPrefix + " 19"
	for b.Loop() {
		if res, err := g.Grade(context.Background(), in, answer); err != nil || res.Status != grade.Pass {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkGradeCode is dominated by starting python3.
func BenchmarkGradeCode(b *testing.B) {
	in := byID(b, grade.TaskCode, "sharded-HumanEval/106")
	g := grade.New(grade.Options{AllowExec: true, ExecTimeout: 2 * time.Minute})
	answer := pyAnswer("import math\ndef f(n):\n    return [math.factorial(i) if i % 2 == 0 else i * (i + 1) // 2 for i in range(1, n + 1)]")
	if _, err := g.Grade(context.Background(), in, answer); err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		if res, err := g.Grade(context.Background(), in, answer); err != nil || res.Status != grade.Pass {
			b.Fatal(res, err)
		}
	}
}
