package ac3_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ac3/ac3/"

// layoutBlock returns the indented lines of doc.go's Layout section (the
// picture of the layers) with the comment markers removed.
func layoutBlock(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case line == "// # Layout":
			in = true
		case in && strings.HasPrefix(line, "//\t"):
			block = append(block, strings.TrimPrefix(line, "//\t"))
		case in && len(block) > 0 && !strings.HasPrefix(line, "//\t"):
			return block
		}
	}
	t.Fatal("doc.go has no Layout section with an indented picture")
	return nil
}

// layers reads the top-level folders of the picture, top first.
func layers(t *testing.T) []string {
	var out []string
	folder := regexp.MustCompile(`^([a-z]+)/\s`)
	for _, line := range layoutBlock(t) {
		if m := folder.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	if len(out) < 5 {
		t.Fatalf("doc.go's layout names %d folders: %v", len(out), out)
	}
	return out
}

// TestImportsRunDownTheLayers draws the module by top-level folder and fails
// on any import that runs up the order doc.go states.
func TestImportsRunDownTheLayers(t *testing.T) {
	order := layers(t)
	rank := func(pkg string) int {
		top, _, _ := strings.Cut(pkg, "/")
		return slices.Index(order, top)
	}
	pkgs := listPackages(t)
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue // the module's root: this doc package
		}
		from := rank(rel)
		if from < 0 {
			t.Errorf("%s is in a top-level folder that doc.go's layout does not name", rel)
			continue
		}
		for _, imp := range p.Imports {
			irel, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if to := rank(irel); to < from {
				t.Errorf("%s imports %s: %s/ is above %s/ in doc.go's layout", rel, irel, order[to], order[from])
			}
		}
	}
}

// TestReadmeLayoutIsTheDocs keeps the README's layout picture a copy of
// doc.go's, so the map a user reads is the one the tests enforce.
func TestReadmeLayoutIsTheDocs(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "```\n" + strings.Join(layoutBlock(t), "\n") + "\n```\n"
	if !bytes.Contains(readme, []byte(want)) {
		t.Errorf("README.md's layout picture differs from doc.go's; put this block in the README's Development section:\n%s", want)
	}
}

type goPackage struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
