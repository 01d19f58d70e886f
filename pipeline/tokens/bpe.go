package tokens

import (
	"embed"
	"encoding/base64"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// bpeTables holds the BPE tables of every encoding, zstd-compressed: the
// same bytes tiktoken-go-loader embeds (bpe_test.go checks it), in 2.6 MB of
// the binary instead of 7.
//
//go:embed bpe/*.tiktoken.zst
var bpeTables embed.FS

// bpeLoader gives tiktoken-go the embedded tables, so it never downloads one.
type bpeLoader struct{}

// LoadTiktokenBpe reads the table named by file's base name, as
// tiktoken-go-loader's offline loader does: one "base64-token rank" per line.
func (bpeLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	name := path.Base(file)
	text, err := bpeTable(name)
	if err != nil {
		return nil, err
	}
	ranks := make(map[string]int)
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		tok, rank, _ := strings.Cut(line, " ")
		b, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			return nil, fmt.Errorf("reading BPE table %s: %w", name, err)
		}
		r, err := strconv.Atoi(rank)
		if err != nil {
			return nil, fmt.Errorf("reading BPE table %s: %w", name, err)
		}
		ranks[string(b)] = r
	}
	return ranks, nil
}

// bpeTable is the text of the named table (e.g. "o200k_base.tiktoken").
func bpeTable(name string) (string, error) {
	z, err := bpeTables.ReadFile("bpe/" + name + ".zst")
	if err != nil {
		return "", fmt.Errorf("loading BPE table %s: %w", name, err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return "", fmt.Errorf("loading BPE table %s: %w", name, err)
	}
	defer dec.Close()
	b, err := dec.DecodeAll(z, nil)
	if err != nil {
		return "", fmt.Errorf("loading BPE table %s: %w", name, err)
	}
	return string(b), nil
}
