package detect_test

import (
	"context"
	"fmt"
	"io"

	"github.com/ac3/ac3/io/detect"
)

func ExampleOpen() {
	ctx := context.Background()
	r, format, err := detect.Open(ctx, "../../fixtures/formats/sharegpt.json", detect.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fmt.Println("format:", format)
	for {
		rec, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if rec.Bad != nil {
			fmt.Println("quarantined", rec.Bad.Source, rec.Bad.Reason)
			continue
		}
		fmt.Println(rec.Conv.Source, len(rec.Conv.Messages), "messages")
	}
	// Output:
	// format: sharegpt
	// sharegpt.json:2 4 messages
	// sharegpt.json:23 2 messages
	// sharegpt.json:41 4 messages
}
