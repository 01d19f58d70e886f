package tokens

import (
	"testing"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// The compressed tables must be exactly tiktoken-go-loader's, so counts do
// not change with the packaging.
func TestBPETablesAreTiktokenGoLoaders(t *testing.T) {
	for _, enc := range encodings {
		name := enc + ".tiktoken"
		want, err := assets.Assets.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := bpeTable(name)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s: the embedded table differs from tiktoken-go-loader's (%d bytes, want %d)", name, len(got), len(want))
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
