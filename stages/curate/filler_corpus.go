package curate

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/curate/curated"
)

// FillerCorpus is a file of passages filler draws from instead of ac3's
// neutral sentences: Huang et al. filled with Wikipedia passages, and with
// Python code for the code-carryover turns. Only the first MaxCorpusBytes
// of passages are read, so a whole Wikipedia dump can be named without
// holding it.
type FillerCorpus struct {
	Path     string
	passages []string
	hash     string
}

// MaxCorpusBytes is how much passage text a filler corpus keeps.
const MaxCorpusBytes = 32 << 20

// LoadFillerCorpus reads path: JSON lines with a "text" or "content" field
// (what Hugging Face dataset exports hold; the-stack's code is "content"),
// or, for any other extension, plain text whose passages are separated by
// blank lines. Empty passages are skipped; a file without any is an error.
func LoadFillerCorpus(path string) (*FillerCorpus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading filler corpus: %w", err)
	}
	defer f.Close()
	c := &FillerCorpus{Path: path}
	if err := c.read(f, strings.HasSuffix(strings.ToLower(path), ".jsonl")); err != nil {
		return nil, fmt.Errorf("reading filler corpus %s: %w", path, err)
	}
	return c, nil
}

// ParseFillerCorpus is LoadFillerCorpus on r (name says what it is in
// errors and in Path).
func ParseFillerCorpus(r io.Reader, name string, jsonl bool) (*FillerCorpus, error) {
	c := &FillerCorpus{Path: name}
	if err := c.read(r, jsonl); err != nil {
		return nil, fmt.Errorf("reading filler corpus %s: %w", name, err)
	}
	return c, nil
}

func (c *FillerCorpus) read(r io.Reader, jsonl bool) error {
	h := sha256.New()
	size := 0
	add := func(p string) bool {
		p = strings.TrimRightFunc(strings.TrimLeft(p, "\r\n"), unicode.IsSpace)
		if strings.TrimSpace(p) == "" {
			return true
		}
		c.passages = append(c.passages, p)
		binary.Write(h, binary.LittleEndian, uint64(len(p)))
		h.Write([]byte(p))
		size += len(p)
		return size < MaxCorpusBytes
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	var para strings.Builder
scan:
	for sc.Scan() {
		line++
		if jsonl {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var w struct {
				Text    *string `json:"text"`
				Content *string `json:"content"`
			}
			if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
				return fmt.Errorf("line %d: not a JSON object: %v", line, err)
			}
			p := w.Text
			if p == nil {
				p = w.Content
			}
			if p == nil {
				return fmt.Errorf("line %d: no \"text\" or \"content\" field", line)
			}
			if !add(*p) {
				break scan
			}
			continue
		}
		if strings.TrimSpace(sc.Text()) == "" {
			full := !add(para.String())
			para.Reset()
			if full {
				break
			}
			continue
		}
		para.WriteString(sc.Text())
		para.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	add(para.String())
	if len(c.passages) == 0 {
		return errors.New("no passages")
	}
	c.hash = hex.EncodeToString(h.Sum(nil))[:16]
	return nil
}

// Hash identifies the passages read; it is part of filler's Version.
func (c *FillerCorpus) Hash() string { return c.hash }

// Passages is how many passages were read.
func (c *FillerCorpus) Passages() int { return len(c.passages) }

// stream returns the text filler for message i of conversation id starts
// from: passages from a start drawn from (corpus, id, i), joined by blank
// lines, until it is at least minBytes long (or every passage is in).
func (c *FillerCorpus) stream(id string, i, minBytes int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", c.hash, id, i)))
	k := int(binary.LittleEndian.Uint64(h[:8]) % uint64(len(c.passages)))
	var b strings.Builder
	for n := 0; n < len(c.passages) && b.Len() < minBytes; n++ {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(c.passages[(k+n)%len(c.passages)])
	}
	return b.String()
}

// wordEnds are the byte offsets just after each word of s, so a cut keeps
// the text's own spacing and line breaks (code stays code).
func wordEnds(s string) []int {
	var ends []int
	in := false
	for k, r := range s {
		sp := unicode.IsSpace(r)
		if in && sp {
			ends = append(ends, k)
		}
		in = !sp
	}
	if in {
		ends = append(ends, len(s))
	}
	return ends
}

// CodeFiller says which replaced messages get code filler when a code
// corpus is given.
type CodeFiller string

const (
	// CodeFillerNever uses the text corpus for every message.
	CodeFillerNever CodeFiller = "never"
	// CodeFillerCodeMessages gives code filler to a message that holds a
	// fenced code block, text filler to the others. Huang et al. chose the
	// code corpus by the turn's pollution category (code carryover); a
	// message's own code is the closest signal the strategy has.
	CodeFillerCodeMessages CodeFiller = "code-messages"
	// CodeFillerAlways uses the code corpus for every message.
	CodeFillerAlways CodeFiller = "always"
)

// FillerOptions configures filler's source. The zero value is ac3's
// neutral sentences.
type FillerOptions struct {
	Text, Code *FillerCorpus
	// CodeWhen chooses between them (default code-messages when Code is
	// set).
	CodeWhen CodeFiller
}

// Validate reports a setting filler cannot use.
func (o FillerOptions) Validate() error {
	switch o.CodeWhen {
	case "", CodeFillerNever, CodeFillerCodeMessages, CodeFillerAlways:
	default:
		return fmt.Errorf("filler code_when %q: want never, code-messages or always", o.CodeWhen)
	}
	if o.Code == nil && o.CodeWhen != "" && o.CodeWhen != CodeFillerNever {
		return fmt.Errorf("filler code_when %s needs a code corpus", o.CodeWhen)
	}
	if o.Code != nil && o.Text == nil && o.CodeWhen != CodeFillerAlways {
		return errors.New("filler: a code corpus alone fills only with code_when: always; give a text corpus too")
	}
	return nil
}

func (o FillerOptions) version() string {
	if o.Text == nil && o.Code == nil {
		return curated.FillerVersion
	}
	v := curated.FillerVersion + "+corpus"
	if o.Text != nil {
		v += ":text=" + o.Text.hash
	}
	if o.Code != nil {
		when := o.CodeWhen
		if when == "" {
			when = CodeFillerCodeMessages
		}
		v += ":code=" + o.Code.hash + ":" + string(when)
	}
	return v
}

// corpusFor is the corpus message m's filler comes from (nil: ac3's
// sentences).
func (o FillerOptions) corpusFor(m conv.Message) *FillerCorpus {
	switch {
	case o.Code == nil:
		return o.Text
	case o.CodeWhen == CodeFillerAlways:
		return o.Code
	case o.CodeWhen == CodeFillerNever:
		return o.Text
	case strings.Contains(m.Content, "```"):
		return o.Code
	}
	return o.Text
}

// corpusContexts is Filler.Contexts with corpora: each replaced message
// becomes a literal part holding the cut of its passage stream whose
// tokens come closest to the message's.
func (s Filler) corpusContexts(ctx context.Context, c *conv.Conversation, from int, ws *Workspace) ([]curated.Context, error) {
	sel, view, cost, err := messageView(ctx, c, from, ws, func(i int) (curated.Part, int, bool) {
		m := c.Messages[i]
		target := ws.Message(i)
		if !isAssistantSide(m.Role) || target <= 0 {
			return curated.Part{}, 0, false
		}
		// Corpus text runs 3–5 bytes per token; 6 leaves room to cut.
		text := s.Options.corpusFor(m).stream(c.ID, i, 6*target+64)
		ends := wordEnds(text)
		count := func(_, w int) int { return ws.Counter().Count(text[:ends[min(w, len(ends))-1]]) }
		w := min(fitFiller(count, i, target), len(ends))
		fill := text[:ends[w-1]]
		return curated.TextPart(m.Role, fill), ws.Cost(m.Role, ws.Counter().Count(fill)), true
	})
	if err != nil || len(sel) == 0 {
		return nil, err
	}
	head, headCost := systemHead(c, ws)
	return prefixContexts(s.Name(), sel, head, headCost, view, cost), nil
}
