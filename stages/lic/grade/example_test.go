package grade_test

import (
	"context"
	"fmt"

	"github.com/ac3/ac3/stages/lic/grade"
)

func ExampleGrader_Grade() {
	in, err := grade.ParseInstance([]byte(`{"task_id": "sharded-GSM8K/435", "task": "math",
		"answer": "Ray shared 25 - 5 = 20 lollipops.\nEach friend received 20/4 = 5.\n#### 5"}`))
	if err != nil {
		panic(err)
	}
	g := grade.New(grade.Options{})
	res, err := g.Grade(context.Background(), in, "He keeps 5 of 25, so 20 are shared by 4 friends.\n\nFinal answer: 5")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Artifact, "by", res.Extraction)
	fmt.Println(res.Reason)
	// Output:
	// pass 5 by answer prefix
	// 5 equals the reference 5
}

func ExampleGrader_Fingerprint() {
	fmt.Println(grade.New(grade.Options{}).Fingerprint())
	// Output:
	// grade v1 db=generated fillings=8 seed=1 query-timeout=10s max-rows=100000 keep-distinct=false plug-values=true code=off
}
