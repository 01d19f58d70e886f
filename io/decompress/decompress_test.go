package decompress_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/ac3/ac3/io/decompress"
)

func compress(t *testing.T, kind string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch kind {
	case "zstd":
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		w.Close()
	case "gzip":
		w := gzip.NewWriter(&buf)
		w.Write(data)
		w.Close()
	default:
		buf.Write(data)
	}
	return buf.Bytes()
}

func TestOpenChoosesByContent(t *testing.T) {
	data := []byte(strings.Repeat("{\"a\":1}\n", 10000))
	for _, tt := range []struct{ kind, name string }{
		{"zstd", "x.jsonl.zst"},
		{"zstd", "misnamed.jsonl"},
		{"gzip", "x.jsonl.gz"},
		{"gzip", "misnamed.zst"},
		{"plain", "x.jsonl"},
		{"plain", "misnamed.gz"},
	} {
		t.Run(tt.kind+" "+tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.name)
			if err := os.WriteFile(path, compress(t, tt.kind, data), 0o644); err != nil {
				t.Fatal(err)
			}
			rc, err := decompress.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes, err %v", len(got), err)
			}
			if err := rc.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestWrapShortAndEmpty(t *testing.T) {
	for _, in := range []string{"", "{", "ab"} {
		rc, err := decompress.Wrap(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		if string(got) != in {
			t.Errorf("%q: got %q", in, got)
		}
	}
}

func TestUnsupported(t *testing.T) {
	for _, head := range []string{"BZh91AY", "\xfd7zXZ\x00\x00"} {
		if _, err := decompress.Wrap(strings.NewReader(head)); !errors.Is(err, decompress.ErrUnsupported) {
			t.Errorf("%q: got %v", head, err)
		}
	}
}

func TestCorruptZstdIsAnError(t *testing.T) {
	data := compress(t, "zstd", []byte(strings.Repeat("hello world ", 50000)))
	data = data[:len(data)/2]
	rc, err := decompress.Wrap(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); err == nil {
		t.Fatal("reading a cut zstd stream gave no error")
	}
}

func TestStrip(t *testing.T) {
	for in, want := range map[string]string{
		"a.jsonl.zst": "a.jsonl", "a.JSONL.GZ": "a.JSONL", "a.json": "a.json", "dir.v2/a.zstd": "dir.v2/a", "zst": "zst",
	} {
		if got := decompress.Strip(in); got != want {
			t.Errorf("Strip(%q) = %q, want %q", in, got, want)
		}
	}
	if got := decompress.InnerExt("x/a.JSONL.gz"); got != ".jsonl" {
		t.Errorf("InnerExt = %q", got)
	}
}

func FuzzWrap(f *testing.F) {
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0})
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rc, err := decompress.Wrap(bytes.NewReader(in))
		if err != nil {
			return
		}
		io.Copy(io.Discard, io.LimitReader(rc, 1<<20))
		rc.Close()
	})
}
