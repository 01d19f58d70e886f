package compress_test

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

	"github.com/ac3/ac3/io/compress"
)

func squeeze(t *testing.T, kind string, data []byte) []byte {
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
			if err := os.WriteFile(path, squeeze(t, tt.kind, data), 0o644); err != nil {
				t.Fatal(err)
			}
			rc, err := compress.Open(path)
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
		rc, err := compress.Wrap(strings.NewReader(in))
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
		if _, err := compress.Wrap(strings.NewReader(head)); !errors.Is(err, compress.ErrUnsupported) {
			t.Errorf("%q: got %v", head, err)
		}
	}
}

func TestCorruptZstdIsAnError(t *testing.T) {
	data := squeeze(t, "zstd", []byte(strings.Repeat("hello world ", 50000)))
	data = data[:len(data)/2]
	rc, err := compress.Wrap(bytes.NewReader(data))
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
		if got := compress.Strip(in); got != want {
			t.Errorf("Strip(%q) = %q, want %q", in, got, want)
		}
	}
	if got := compress.InnerExt("x/a.JSONL.gz"); got != ".jsonl" {
		t.Errorf("InnerExt = %q", got)
	}
}

func FuzzWrap(f *testing.F) {
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0})
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rc, err := compress.Wrap(bytes.NewReader(in))
		if err != nil {
			return
		}
		io.Copy(io.Discard, io.LimitReader(rc, 1<<20))
		rc.Close()
	})
}

func TestFromNameAndNewWriterRoundTrip(t *testing.T) {
	data := []byte(strings.Repeat("{\"a\":1}\n", 1000))
	for name, want := range map[string]compress.Kind{
		"a.jsonl": compress.None, "a.jsonl.zst": compress.Zstd, "a.JSONL.ZSTD": compress.Zstd,
		"a.jsonl.gz": compress.Gzip, "a.jsonl.gzip": compress.Gzip, "a.zst.jsonl": compress.None,
	} {
		k := compress.FromName(name)
		if k != want {
			t.Errorf("FromName(%q) = %q, want %q", name, k, want)
			continue
		}
		var buf bytes.Buffer
		w, err := compress.NewWriter(&buf, k)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := compress.Sniff(buf.Bytes()); got != k {
			t.Errorf("%s: wrote %q, want %q", name, got, k)
		}
		rc, err := compress.Wrap(&buf)
		if err != nil {
			t.Fatal(err)
		}
		back, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(back, data) {
			t.Errorf("%s: read back %d bytes (%v), want %d", name, len(back), err, len(data))
		}
	}
	if _, err := compress.NewWriter(io.Discard, compress.XZ); !errors.Is(err, compress.ErrUnsupported) {
		t.Errorf("xz writer: err = %v", err)
	}
}
