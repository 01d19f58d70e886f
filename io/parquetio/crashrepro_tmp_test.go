package parquetio_test

import (
	"context"
	"testing"

	"github.com/ac3/ac3/io/parquetio"
)

func TestTmpCrashRepro(t *testing.T) {
	r, _, err := parquetio.OpenReader("/tmp/pq-crash-input")
	if err != nil {
		t.Log("open:", err)
		return
	}
	defer r.Close()
	for range 10000 {
		if _, err := r.Next(context.Background()); err != nil {
			t.Log("next:", err)
			return
		}
	}
}
