package detect

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ac3/ac3/io/compress"
	"github.com/ac3/ac3/io/jsonl"
	"github.com/ac3/ac3/io/lic"
	"github.com/ac3/ac3/io/openaichat"
	"github.com/ac3/ac3/io/sharegpt"
	"github.com/ac3/ac3/io/sharelm"
	"github.com/ac3/ac3/io/wildchat"
	"github.com/ac3/ac3/pipeline/record"
)

// Format names, as accepted in Options.Format and returned by Open.
const (
	Auto      = "auto"
	WildChat  = "wildchat"
	OpenAI    = "openai"
	Canonical = "canonical"
	ShareGPT  = "sharegpt"
	ShareLM   = "sharelm"
	LiC       = "lic"
	Parquet   = "parquet"
	Arrow     = "arrow"
)

// Formats lists the names Options.Format accepts besides Auto.
func Formats() []string {
	return []string{WildChat, OpenAI, Canonical, ShareGPT, ShareLM, LiC, Parquet, Arrow}
}

// ErrUnknownFormat is wrapped by errors about content detect cannot place.
var ErrUnknownFormat = errors.New("unknown input format")

// Options says how to open an input.
type Options struct {
	// Format is Auto (or "") to sniff, or one of Formats to force a reader.
	Format string
	// OpenParquet and OpenArrow open columnar files; they are fields so
	// detect need not import the Arrow packages. A columnar input with a
	// nil func is an error. OpenParquet also reports the format of the
	// rows it found.
	OpenParquet func(path string) (record.Reader, string, error)
	OpenArrow   func(path string) (record.Reader, error)
	// MaxLineBytes caps one line or array element of a text input;
	// 0 means jsonl.DefaultMaxLineBytes.
	MaxLineBytes int
}

// sniffBytes is how much of a text input is looked at to pick its format.
const sniffBytes = 1 << 20

// Decoder returns the DecodeFunc of a text format, for callers that split
// the input themselves and decode on several goroutines.
func Decoder(format string) (jsonl.DecodeFunc, bool) {
	switch format {
	case WildChat:
		return wildchat.Decode, true
	case OpenAI, Canonical:
		return openaichat.Decode, true
	case ShareGPT:
		return sharegpt.Decode, true
	case ShareLM:
		return sharelm.Decode, true
	case LiC:
		return lic.Decode, true
	}
	return nil, false
}

// Open opens the input at path and returns a reader of its records and the
// name of the format it chose. Closing the reader closes the file. ctx bounds
// only the opening; pass it again to Next.
func Open(ctx context.Context, path string, opts Options) (record.Reader, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	format := strings.ToLower(opts.Format)
	if format == "" {
		format = Auto
	}
	if format != Auto {
		if _, ok := Decoder(format); !ok && format != Parquet && format != Arrow {
			return nil, "", fmt.Errorf("opening %s: %w %q (want %s or %s)", path, ErrUnknownFormat, opts.Format, Auto, strings.Join(Formats(), ", "))
		}
	}
	if format == Auto || format == Parquet || format == Arrow {
		col, err := columnar(path)
		if err != nil {
			return nil, "", fmt.Errorf("opening %s: %w", path, err)
		}
		if format == Auto {
			format = col
		}
	}
	switch format {
	case Parquet:
		if opts.OpenParquet == nil {
			return nil, "", fmt.Errorf("opening %s: Parquet input needs a Parquet reader, and none was configured", path)
		}
		r, f, err := opts.OpenParquet(path)
		if err != nil {
			return nil, "", fmt.Errorf("opening %s as Parquet: %w", path, err)
		}
		return r, f, nil
	case Arrow:
		if opts.OpenArrow == nil {
			return nil, "", fmt.Errorf("opening %s: Arrow IPC input needs an Arrow reader, and none was configured", path)
		}
		r, err := opts.OpenArrow(path)
		if err != nil {
			return nil, "", fmt.Errorf("opening %s as Arrow IPC: %w", path, err)
		}
		return r, Arrow, nil
	}

	t, err := openText(path, format, opts)
	if err != nil {
		return nil, "", err
	}
	r := jsonl.NewRecordReader(t.r, t.File, t.Decode, jsonl.WithMaxLineBytes(opts.MaxLineBytes))
	return &closing{Reader: r, c: t.c}, t.Format, nil
}

// Text is an opened text input split into raw records but not decoded, for
// callers that decode on several goroutines: read Chunks on one goroutine,
// copy each chunk's bytes, and hand them to jsonl.DecodeChunk with Decode
// elsewhere. Close it when done.
type Text struct {
	Chunks *jsonl.ChunkReader
	Decode jsonl.DecodeFunc
	Format string
	File   string // the name records carry in Source.File
	r      io.Reader
	c      io.Closer
}

// Close closes the file and its decompressor.
func (t *Text) Close() error { return t.c.Close() }

// OpenText is Open for text inputs, stopping short of decoding. It fails for
// Parquet and Arrow files.
func OpenText(ctx context.Context, path string, opts Options) (*Text, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	format := strings.ToLower(opts.Format)
	if format == "" {
		format = Auto
	}
	if format == Auto {
		col, err := columnar(path)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
		format = col
	}
	if _, ok := Decoder(format); !ok && format != Auto {
		return nil, fmt.Errorf("opening %s: %q is not a text format", path, format)
	}
	t, err := openText(path, format, opts)
	if err != nil {
		return nil, err
	}
	t.Chunks = jsonl.NewChunkReader(t.r, jsonl.WithMaxLineBytes(opts.MaxLineBytes))
	return t, nil
}

// openText decompresses path and, when format is Auto, sniffs it.
func openText(path, format string, opts Options) (*Text, error) {
	rc, err := compress.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(rc, sniffBytes)
	if format == Auto {
		head, err := br.Peek(sniffBytes)
		if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
			rc.Close()
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if format, err = Sniff(head, compress.InnerExt(path)); err != nil {
			rc.Close()
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
	}
	decode, _ := Decoder(format)
	return &Text{Decode: decode, Format: format, File: filepath.Base(path), r: br, c: rc}, nil
}

// columnar reports Parquet or Arrow from a file's magic bytes, or Auto.
func columnar(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 8)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", err
	}
	head = head[:n]
	ext := compress.InnerExt(path)
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return Parquet, nil
	case bytes.HasPrefix(head, []byte("ARROW1")):
		return Arrow, nil
	case bytes.HasPrefix(head, []byte{0xff, 0xff, 0xff, 0xff}) &&
		(ext == ".arrow" || ext == ".arrows" || ext == ".ipc" || ext == ".feather"):
		// An IPC stream starts with a continuation marker; that alone is
		// too weak a signal, so the extension has to agree.
		return Arrow, nil
	}
	return Auto, nil
}

// Sniff picks the text format of an input from its first bytes (after
// decompression); ext (like ".jsonl") breaks ties. It looks at the keys of
// the first records: up to 16 lines, so a bad first line does not decide,
// whether or not it starts like JSON (jsonl.IsArray tells a JSON array from
// JSON Lines whose first line is broken, as the readers do).
func Sniff(head []byte, ext string) (string, error) {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		// Empty input: any text reader yields nothing.
		return OpenAI, nil
	}
	if jsonl.IsArray(trimmed) {
		c := jsonl.NewCursor(trimmed)
		var keys map[string]bool
		// The first element may be larger than head; the keys seen
		// before the cut are enough.
		_ = c.Array(func(i int) error {
			if i > 0 {
				return errStop
			}
			keys = topKeys(c)
			return errStop
		})
		if f := fromKeys(keys); f != "" {
			return f, nil
		}
		return "", fmt.Errorf("%w: a JSON array whose first element has keys %s (want shards, conversations, messages or conversation)", ErrUnknownFormat, keyList(keys))
	}
	// JSON Lines: the first record whose keys name a format decides.
	var seen map[string]bool
	lines := bytes.Split(trimmed, []byte("\n"))
	for i, line := range lines {
		if i >= 16 {
			break
		}
		c := jsonl.NewCursor(line)
		if c.Kind() != jsonl.KindObject {
			continue
		}
		keys := topKeys(c)
		if f := fromKeys(keys); f != "" {
			return f, nil
		}
		if seen == nil {
			seen = keys
		}
	}
	if seen == nil {
		what := trimmed[:min(len(trimmed), 16)]
		return "", fmt.Errorf("%w: content starts with %q, not JSON, Parquet or Arrow (extension %q)", ErrUnknownFormat, what, ext)
	}
	return "", fmt.Errorf("%w: JSON Lines whose first record has keys %s (want conversation, messages, conversations or shards)", ErrUnknownFormat, keyList(seen))
}

var errStop = errors.New("stop")

// topKeys collects the top-level keys of the object at c, tolerating a
// record that is cut short or broken after some keys.
func topKeys(c *jsonl.Cursor) map[string]bool {
	keys := map[string]bool{}
	if c.Kind() != jsonl.KindObject {
		return keys
	}
	_ = c.Object(func(key []byte, _ int) error {
		keys[string(key)] = true
		return c.Skip()
	})
	return keys
}

func fromKeys(k map[string]bool) string {
	switch {
	case k["shards"]:
		return LiC
	case k["conversation"] && k["conversation_id"] && (k["model_name"] || k["conversation_metadata"] || k["user_metadata"]):
		// ShareLM spells its model model_name and keeps language and
		// flags in conversation_metadata; WildChat has model, language.
		return ShareLM
	case k["conversation"] && (k["conversation_hash"] || k["conversation_id"] || k["turn"]):
		return WildChat
	case k["messages"] && k["format"] && k["source"]:
		return Canonical
	case k["messages"]:
		return OpenAI
	case k["conversations"]:
		return ShareGPT
	case k["conversation"]:
		// A WildChat-like record without its usual ids.
		return WildChat
	}
	return ""
}

func keyList(k map[string]bool) string {
	if len(k) == 0 {
		return "(none)"
	}
	var names []string
	for n := range k {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 8 {
		names = append(names[:8], "...")
	}
	return strings.Join(names, ", ")
}

// closing closes the decompressor and file when the reader is closed.
type closing struct {
	record.Reader
	c io.Closer
}

func (c *closing) Close() error { return errors.Join(c.Reader.Close(), c.c.Close()) }
