package tokens

import (
	"bytes"
	"encoding/base64"
	"flag"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

var pack = flag.Bool("pack", false, "rewrite bpe/*.ranks.zst from tiktoken-go-loader's tables")

// loaderRanks parses tiktoken-go-loader's text table of encoding name.
func loaderRanks(t *testing.T, name string) map[string]int {
	t.Helper()
	text, err := assets.Assets.ReadFile(name + ".tiktoken")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ranks := make(map[string]int)
	for line := range strings.Lines(string(text)) {
		tok, rank, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if !ok {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := strconv.Atoi(rank)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ranks[string(b)] = r
	}
	return ranks
}

// The embedded tables must hold exactly tiktoken-go-loader's ranks, so
// counts do not change with the packaging. -pack rewrites them (with the zstd command).
func TestBPETablesAreTiktokenGoLoaders(t *testing.T) {
	if *pack {
		for _, name := range encodings {
			if _, ok := derivedTables[name]; ok {
				continue
			}
			ranks := loaderRanks(t, name)
			toks := slices.SortedFunc(maps.Keys(ranks), func(a, b string) int { return ranks[a] - ranks[b] })
			rs := make([]int, len(toks))
			for i, tok := range toks {
				rs[i] = ranks[tok]
			}
			// zstd's command line at its top level packs 10% tighter
			// than klauspost's best; the decoder reads either.
			cmd := exec.Command("zstd", "-q", "-f", "--ultra", "-22", "-o", "bpe/"+name+".ranks.zst")
			cmd.Stdin = bytes.NewReader(packRanks(toks, rs))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("zstd: %v: %s", err, out)
			}
		}
	}
	for _, name := range encodings {
		want := loaderRanks(t, name)
		got, err := bpeRanks(name)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: the embedded table differs from tiktoken-go-loader's (%d ranks, want %d)", name, len(got), len(want))
		}
	}
}

func TestBPELoaderRanks(t *testing.T) {
	ranks, err := bpeLoader{}.LoadTiktokenBpe("https://example.invalid/cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	if len(ranks) != 100256 || ranks["!"] != 0 || ranks["\""] != 1 {
		t.Errorf("cl100k_base: %d ranks, ! = %d, \" = %d; want 100256, 0, 1", len(ranks), ranks["!"], ranks["\""])
	}
	if _, err := (bpeLoader{}).LoadTiktokenBpe("nope.tiktoken"); err == nil {
		t.Error("an unknown table loaded")
	}
}

// Damaged packed tables are an error, never a panic.
func FuzzUnpackRanks(f *testing.F) {
	f.Add(packRanks([]string{"a", "bc"}, []int{0, 2}), -1)
	f.Add([]byte{0, 200, 1}, -1)
	f.Fuzz(func(t *testing.T, b []byte, below int) {
		_, _ = unpackRanks(b, below)
	})
}
