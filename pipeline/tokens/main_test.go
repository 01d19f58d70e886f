package tokens_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
)

// noNetwork fails any HTTP request. tiktoken-go downloads BPE tables through
// net/http's default client unless the offline loader is in place, so with
// this installed a test that loads an encoding would fail if New ever went
// online.
type noNetwork struct{}

func (noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	fmt.Fprintf(os.Stderr, "unexpected network request to %s\n", r.URL.Host)
	os.Exit(3)
	return nil, errors.New("unreachable")
}

func TestMain(m *testing.M) {
	http.DefaultTransport = noNetwork{}
	os.Exit(m.Run())
}
