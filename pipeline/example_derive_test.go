package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ac3/ac3/pipeline"
	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/pipeline/ledger"
)

// A deriving step makes two replicates of a trajectory from every ingested
// conversation; the run stores them as conversations of origin "sim", and a
// stage scoped to them plans only those.
func ExampleDerive() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "derive-example")
	defer os.RemoveAll(dir)
	l, err := ledger.Open(ctx, filepath.Join(dir, "run.db"), ledger.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	in, _ := l.AddInput(ctx, ledger.Input{Path: "/data/tasks.jsonl", Format: "lic"})
	var tasks []*conv.Conversation
	for i := range 3 {
		tasks = append(tasks, &conv.Conversation{ID: fmt.Sprint("task", i), Messages: []conv.Message{{Role: conv.User, Content: "shard 1"}, {Role: conv.User, Content: "shard 2"}}})
	}
	l.CommitIngest(ctx, ledger.IngestBatch{InputID: in.ID, Finished: true, Kept: tasks})

	replicate := pipeline.Each(func(_ context.Context, s ledger.Stored) ([]*conv.Conversation, error) {
		var out []*conv.Conversation
		for r := 1; r <= 2; r++ {
			out = append(out, &conv.Conversation{ID: fmt.Sprintf("%s/r%d", s.Conv.ID, r), Format: "sim", Messages: s.Conv.Messages})
		}
		return out, nil
	})
	sum, err := pipeline.Derive(ctx, l, "sim", ledger.MustOrigins(ledger.OriginSource), replicate, pipeline.DeriveOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("visited %d, stored %d\n", sum.Parents, sum.Added)

	// Deriving again (a resumed run) stores nothing new.
	sum, _ = pipeline.Derive(ctx, l, "sim", ledger.MustOrigins(ledger.OriginSource), replicate, pipeline.DeriveOptions{})
	fmt.Printf("again: stored %d, already there %d\n", sum.Added, sum.Existing)

	l.In(ledger.MustOrigins("sim")).EachPage(ctx, 10, func(page []ledger.Stored, _, _ int64) error {
		for _, s := range page {
			fmt.Println(s.Seq, s.Conv.ID, "from seq", s.Parent)
		}
		return nil
	})
	st, _ := l.Status(ctx)
	fmt.Println(st.Origins)
	// Output:
	// visited 3, stored 6
	// again: stored 0, already there 6
	// 4 task0/r1 from seq 1
	// 5 task0/r2 from seq 1
	// 6 task1/r1 from seq 2
	// 7 task1/r2 from seq 2
	// 8 task2/r1 from seq 3
	// 9 task2/r2 from seq 3
	// map[sim:6 source:3]
}
