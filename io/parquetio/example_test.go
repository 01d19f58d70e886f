package parquetio_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ac3/ac3/io/parquetio"
	"github.com/ac3/ac3/pipeline/conv"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "chats.parquet")

	w, err := parquetio.Create(path, parquetio.WriterOptions{})
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"a", "b"} {
		c := &conv.Conversation{ID: id, Format: "jsonl", Messages: []conv.Message{
			{Role: conv.User, Content: "hello " + id},
			{Role: conv.Assistant, Content: "hi"},
		}}
		if err := w.Write(c); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil { // the file appears at path only now
		panic(err)
	}

	r, format, err := parquetio.OpenReader(path)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	fmt.Println(format)
	for {
		rec, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(rec.Conv.ID, rec.Conv.Messages[0].Content)
	}
	// Output:
	// canonical
	// a hello a
	// b hello b
}
