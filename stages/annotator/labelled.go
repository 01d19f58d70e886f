package annotator

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// ReadLabelled reads a labelled set: JSONL, one example of type T a line,
// blank lines skipped. check validates each example; its error is reported
// with the line number, so a typo in a hand-written set points at its line.
func ReadLabelled[T any](r io.Reader, check func(T) error) ([]T, error) {
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e T
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("reading labelled turn on line %d: %w", line, err)
		}
		if err := check(e); err != nil {
			return nil, fmt.Errorf("reading labelled turn on line %d %w", line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading labelled turns: %w", err)
	}
	return out, nil
}
