package tokens

import (
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// bpeTables holds the BPE tables of the encodings, packed (see packRanks)
// and zstd-compressed: the same ranks tiktoken-go-loader embeds (bpe_test.go
// checks it), in 1.5 MB of the binary instead of 7. Packing the raw token
// bytes rather than tiktoken's base64 text saves a third after compression.
//
//go:embed bpe/*.ranks.zst
var bpeTables embed.FS

// derivedTables are encodings whose table is a rank-limited part of
// another's: r50k_base is p50k_base without the 24 whitespace tokens p50k
// added after rank 50256, so shipping it would repeat 300 KB.
var derivedTables = map[string]struct {
	from  string
	below int
}{
	"r50k_base": {from: "p50k_base", below: 50256},
}

// bpeLoader gives tiktoken-go the embedded tables, so it never downloads one.
type bpeLoader struct{}

// LoadTiktokenBpe gives the ranks of the table named by file's base name
// ("o200k_base.tiktoken"), as tiktoken-go-loader's offline loader does.
func (bpeLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	return bpeRanks(strings.TrimSuffix(path.Base(file), ".tiktoken"))
}

// bpeRanks reads the embedded ranks of encoding name.
func bpeRanks(name string) (map[string]int, error) {
	below := -1
	if d, ok := derivedTables[name]; ok {
		name, below = d.from, d.below
	}
	z, err := bpeTables.ReadFile("bpe/" + name + ".ranks.zst")
	if err != nil {
		return nil, fmt.Errorf("loading BPE table %s: %w", name, err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("loading BPE table %s: %w", name, err)
	}
	defer dec.Close()
	b, err := dec.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("loading BPE table %s: %w", name, err)
	}
	ranks, err := unpackRanks(b, below)
	if err != nil {
		return nil, fmt.Errorf("loading BPE table %s: %w", name, err)
	}
	return ranks, nil
}

// packRanks writes tokens in rank order as records of uvarint(gap),
// uvarint(len), bytes, where gap is how many ranks were skipped before this
// one (tiktoken's tables have one hole, where a special token sits).
func packRanks(tokens []string, ranks []int) []byte {
	var out []byte
	next := 0
	for i, tok := range tokens {
		out = binary.AppendUvarint(out, uint64(ranks[i]-next))
		out = binary.AppendUvarint(out, uint64(len(tok)))
		out = append(out, tok...)
		next = ranks[i] + 1
	}
	return out
}

// unpackRanks reads packRanks' records, keeping ranks below below (< 0:
// all).
func unpackRanks(b []byte, below int) (map[string]int, error) {
	ranks := make(map[string]int, len(b)/7)
	next := 0
	for len(b) > 0 {
		gap, n := binary.Uvarint(b)
		if n <= 0 || gap > uint64(len(b)) {
			return nil, errors.New("bad rank gap")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errors.New("bad token length")
		}
		b = b[n:]
		rank := next + int(gap)
		if below >= 0 && rank >= below {
			break
		}
		ranks[string(b[:size])] = rank
		b = b[size:]
		next = rank + 1
	}
	return ranks, nil
}
