//go:build unix

package bench_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// genVersion names the generator in cached file names: bump it whenever the
// output changes, so a stale file is never measured.
const genVersion = "v1"

// Conversation counts of the two generated files. The small one is the
// first smallConvs lines of the large one (same seed, same stream).
const (
	smallConvs = 10_000
	largeConvs = 200_000
	genSeed    = 2
)

// genMeta is kept beside a generated file: its decompressed size, so MB/s
// figures need not decompress it once more.
type genMeta struct {
	Conversations int   `json:"conversations"`
	RawBytes      int64 `json:"raw_bytes"`
	ZstBytes      int64 `json:"zst_bytes"`
}

type genFile struct {
	Path string
	genMeta
}

var generated = sync.OnceValues(generate)

// generate writes, or finds from an earlier run, the small and the large
// WildChat-like .jsonl.zst files.
func generate() ([2]genFile, error) {
	var out [2]genFile
	dir := filepath.Join("testdata", "generated")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, fmt.Errorf("making %s: %w", dir, err)
	}
	names := [2]string{}
	for i, n := range []int{smallConvs, largeConvs} {
		names[i] = filepath.Join(dir, fmt.Sprintf("wildchat-%s-seed%d-%d.jsonl.zst", genVersion, genSeed, n))
		out[i].Path = names[i]
	}
	if a, errA := readMeta(names[0]); errA == nil {
		if b, errB := readMeta(names[1]); errB == nil {
			out[0].genMeta, out[1].genMeta = a, b
			return out, nil
		}
	}
	fmt.Fprintf(os.Stderr, "bench: generating %d conversations into %s (once; cached)\n", largeConvs, dir)
	var ws [2]*zfile
	for i, p := range names {
		z, err := createZ(p)
		if err != nil {
			return out, err
		}
		defer z.abort()
		ws[i] = z
	}
	g := newGen(genSeed)
	var line []byte
	for i := range largeConvs {
		line = g.conversation(line[:0], i)
		line = append(line, '\n')
		for k, z := range ws {
			if k == 0 && i >= smallConvs {
				continue
			}
			if _, err := z.Write(line); err != nil {
				return out, fmt.Errorf("writing %s: %w", z.path, err)
			}
		}
	}
	for i, z := range ws {
		m, err := z.finish(out[i].Path, []int{smallConvs, largeConvs}[i])
		if err != nil {
			return out, err
		}
		out[i].genMeta = m
	}
	return out, nil
}

func readMeta(path string) (genMeta, error) {
	var m genMeta
	b, err := os.ReadFile(path + ".json")
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return m, err
	}
	if st.Size() != m.ZstBytes {
		return m, fmt.Errorf("%s is %d bytes, its meta says %d", path, st.Size(), m.ZstBytes)
	}
	return m, nil
}

// zfile compresses into a temporary file renamed into place by finish, so an
// interrupted generation never leaves a file that looks complete.
type zfile struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	zw   *zstd.Encoder
	raw  int64
	done bool
}

func createZ(path string) (*zfile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".partial-*")
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	// Level 3 (the zstd CLI default) is what a downloaded dump is likely to
	// have; a faster level would make the file bigger and easier to read.
	zw, err := zstd.NewWriter(bw, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("starting zstd for %s: %w", path, err)
	}
	return &zfile{path: path, f: f, bw: bw, zw: zw}, nil
}

func (z *zfile) Write(p []byte) (int, error) {
	n, err := z.zw.Write(p)
	z.raw += int64(n)
	return n, err
}

func (z *zfile) finish(path string, convs int) (genMeta, error) {
	var m genMeta
	err := z.zw.Close()
	if err == nil {
		err = z.bw.Flush()
	}
	if err == nil {
		err = z.f.Close()
	}
	if err != nil {
		return m, fmt.Errorf("finishing %s: %w", path, err)
	}
	st, err := os.Stat(z.f.Name())
	if err != nil {
		return m, err
	}
	m = genMeta{Conversations: convs, RawBytes: z.raw, ZstBytes: st.Size()}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(path+".json", b, 0o644); err != nil {
		return m, fmt.Errorf("writing %s.json: %w", path, err)
	}
	if err := os.Rename(z.f.Name(), path); err != nil {
		return m, fmt.Errorf("renaming %s: %w", path, err)
	}
	z.done = true
	return m, nil
}

func (z *zfile) abort() {
	if !z.done {
		z.f.Close()
		os.Remove(z.f.Name())
	}
}

// gen makes WildChat-shaped records. What matters for the benchmarks is that
// the bytes look like the real dump to a decompressor, a JSON decoder and a
// tokenizer: the real record's fields (with OpenAI moderation categories
// and scores per message, which are a large part of a real line), turn counts
// skewed short, message lengths from a few words to pasted pages, and text
// drawn from a large vocabulary with Zipf frequencies plus numbers, code and
// identifiers, so that it compresses about as well as real chat text rather
// than like word salad from fifty words.
type gen struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string // Latin-script words, most frequent first
	cyr   []string // Cyrillic words
	han   []string // runs of CJK characters
	uas   []string
	buf   []byte
}

var (
	languages = []string{"English", "English", "English", "English", "English", "Chinese", "Russian", "Spanish", "French", "English"}
	models    = []string{"gpt-3.5-turbo-0301", "gpt-3.5-turbo-0613", "gpt-4-0314", "gpt-4-1106-preview"}
	countries = []string{"United States", "China", "Russia", "India", "Canada", "Germany", "France", "Brazil", "United Kingdom", "Spain"}
	states    = []string{"California", "Beijing", "Moscow", "Texas", "Ontario", "Bavaria", "Ile-de-France", "Sao Paulo", "England", "Madrid"}
	moderated = []string{"harassment", "harassment/threatening", "harassment_threatening", "hate", "hate/threatening", "hate_threatening", "self-harm", "self-harm/instructions", "self-harm/intent", "self_harm", "self_harm_instructions", "self_harm_intent", "sexual", "sexual/minors", "sexual_minors", "violence", "violence/graphic", "violence_graphic"}
	detoxify  = []string{"identity_attack", "insult", "obscene", "severe_toxicity", "sexual_explicit", "threat", "toxicity"}
	// Code blocks people paste or get back; %s are filled with words and
	// numbers.
	code = []string{
		"def %s(%s, %s):\n    result = []\n    for item in %s:\n        if item.%s > %s:\n            result.append(item)\n    return result\n",
		"const %s = async (%s) => {\n  const res = await fetch(`/api/%s/${%s}`);\n  if (!res.ok) throw new Error('%s %s');\n  return res.json();\n};\n",
		"SELECT %s, COUNT(*) AS n FROM %s WHERE %s > %s GROUP BY %s ORDER BY n DESC LIMIT 10;\n",
		"func %s(%s []int) int {\n\ttotal := 0\n\tfor _, v := range %s {\n\t\tif v > %s {\n\t\t\ttotal += v\n\t\t}\n\t}\n\treturn total // %s\n}\n",
	}
)

func newGen(seed uint64) *gen {
	r := rand.New(rand.NewPCG(seed, 0xbe7c4))
	g := &gen{r: r}
	onsets := strings.Fields("b c d f g h j k l m n p r s t v w z br ch cl cr dr fl gr pl pr sh st th tr str sp sc")
	nuclei := strings.Fields("a e i o u ai ea ee ie oo ou")
	codas := []string{"", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck", "rt", "tion", "ment", "ing", "ed", "er", "ly"}
	seen := map[string]bool{}
	for len(g.vocab) < 30000 {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(onsets[r.IntN(len(onsets))])
			b.WriteString(nuclei[r.IntN(len(nuclei))])
		}
		b.WriteString(codas[r.IntN(len(codas))])
		if w := b.String(); !seen[w] {
			seen[w] = true
			g.vocab = append(g.vocab, w)
		}
	}
	// The commonest words are short, as in any language.
	common := strings.Fields("the a of to and in is it that for you this with on be are can as if or not your we by from at")
	copy(g.vocab, common)
	cyrl := []rune("абвгдежзийклмнопрстуфхцчшщыэюя")
	for range 8000 {
		n := 2 + r.IntN(9)
		w := make([]rune, n)
		for i := range w {
			w[i] = cyrl[r.IntN(len(cyrl))]
		}
		g.cyr = append(g.cyr, string(w))
	}
	for range 8000 {
		n := 1 + r.IntN(4)
		w := make([]rune, n)
		for i := range w {
			// The commonest few thousand CJK ideographs.
			w[i] = rune(0x4e00 + r.IntN(3500))
		}
		g.han = append(g.han, string(w))
	}
	for range 40 {
		g.uas = append(g.uas, fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.%d.%d Safari/537.36", 100+r.IntN(20), r.IntN(6000), r.IntN(200)))
	}
	g.zipf = rand.NewZipf(r, 1.1, 2, uint64(len(g.vocab)-1))
	return g
}

// turns is 1–12 user turns, most conversations short (WildChat averages
// about 2.5).
func (g *gen) turns() int {
	n := 1
	for n < 12 && g.r.Float64() < 0.55 {
		n++
	}
	return n
}

// length draws a message length: mostly around typical, sometimes a
// one-liner, sometimes a pasted page.
func (g *gen) length(typical int) int {
	switch p := g.r.Float64(); {
	case p < 0.15:
		return 5 + g.r.IntN(60)
	case p < 0.93:
		return typical/4 + g.r.IntN(typical*3/2)
	default:
		return typical + g.r.IntN(typical*4)
	}
}

func (g *gen) word(lang string) string {
	switch lang {
	case "Russian":
		if g.r.IntN(5) > 0 {
			return g.cyr[int(g.zipf.Uint64())%len(g.cyr)]
		}
	case "Chinese":
		if g.r.IntN(5) > 0 {
			return g.han[int(g.zipf.Uint64())%len(g.han)]
		}
	}
	return g.vocab[g.zipf.Uint64()]
}

// text appends about n bytes of chat text in lang.
func (g *gen) text(b []byte, lang string, n int) []byte {
	start := len(b)
	sentence := 0
	if n > 400 && g.r.IntN(5) == 0 {
		f := code[g.r.IntN(len(code))]
		args := make([]any, strings.Count(f, "%s"))
		for i := range args {
			if i%3 == 2 {
				args[i] = strconv.Itoa(g.r.IntN(1000))
			} else {
				args[i] = g.vocab[g.zipf.Uint64()]
			}
		}
		b = append(b, "```\n"...)
		b = fmt.Appendf(b, f, args...)
		b = append(b, "```\n"...)
	}
	for len(b)-start < n {
		switch p := g.r.IntN(100); {
		case p < 6:
			b = strconv.AppendFloat(b, g.r.Float64()*float64(g.r.IntN(10000)), 'f', g.r.IntN(4), 64)
			b = append(b, ' ')
		case p < 7:
			b = fmt.Appendf(b, "\n%d. ", 1+g.r.IntN(9))
		default:
			w := g.word(lang)
			if sentence == 0 && lang != "Chinese" {
				r, size := utf8.DecodeRuneInString(w)
				b = utf8.AppendRune(b, []rune(strings.ToUpper(string(r)))[0])
				w = w[size:]
			}
			b = append(b, w...)
			sentence++
			if sentence > 6 && g.r.IntN(10) == 0 {
				b = append(b, ". "...)
				if g.r.IntN(6) == 0 {
					b = append(b, "\n\n"...)
				}
				sentence = 0
			} else if lang != "Chinese" {
				b = append(b, ' ')
			}
		}
	}
	return b
}

// conversation appends record i as one JSON line (without the newline).
func (g *gen) conversation(b []byte, i int) []byte {
	r := g.r
	lang := languages[r.IntN(len(languages))]
	turns := g.turns()
	toxic := r.IntN(40) == 0
	country, state := r.IntN(len(countries)), r.IntN(len(states))
	ip := fmt.Sprintf("%016x%016x%016x%016x", r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64())
	ua := g.uas[r.IntN(len(g.uas))]
	ts := fmt.Sprintf("2023-%02d-%02d %02d:%02d:%02d+00:00", 4+r.IntN(9), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))

	b = fmt.Appendf(b, `{"conversation_hash":"%016x%016x","model":%q,"timestamp":%q,"conversation":[`, r.Uint64(), uint64(i), models[r.IntN(len(models))], ts)
	for t := range turns {
		for k, role := range []string{"user", "assistant"} {
			if t > 0 || k > 0 {
				b = append(b, ',')
			}
			n := g.length(300)
			if role == "assistant" {
				n = g.length(1800)
			}
			g.buf = g.text(g.buf[:0], lang, n)
			b = append(b, `{"content":`...)
			b = appendString(b, g.buf)
			b = fmt.Appendf(b, `,"country":%q,"hashed_ip":"%s","header":{"accept-language":"en-US,en;q=0.9","user-agent":%q},"language":%q,"redacted":false,"role":%q,"state":%q,"timestamp":`,
				countries[country], ip, ua, lang, role, states[state])
			if role == "assistant" {
				b = fmt.Appendf(b, "%q", ts)
			} else {
				b = append(b, "null"...)
			}
			b = fmt.Appendf(b, `,"toxic":%t,"turn_identifier":%d}`, toxic, 100000+i*13+t)
		}
	}
	b = fmt.Appendf(b, `],"turn":%d,"language":%q,"openai_moderation":[`, turns, lang)
	for m := range 2 * turns {
		if m > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"categories":{`...)
		for j, c := range moderated {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, c...)
			b = append(b, '"', ':')
			b = strconv.AppendBool(b, toxic && j == 0)
		}
		b = append(b, `},"category_scores":{`...)
		for j, c := range moderated {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, c...)
			b = append(b, '"', ':')
			b = strconv.AppendFloat(b, r.ExpFloat64()*1e-4, 'g', -1, 64)
		}
		b = fmt.Appendf(b, `},"flagged":%t}`, toxic)
	}
	b = append(b, `],"detoxify_moderation":[`...)
	for m := range 2 * turns {
		if m > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for j, c := range detoxify {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, c...)
			b = append(b, '"', ':')
			b = strconv.AppendFloat(b, r.ExpFloat64()*1e-3, 'g', -1, 64)
		}
		b = append(b, '}')
	}
	b = fmt.Appendf(b, `],"toxic":%t,"redacted":%t,"state":%q,"country":%q,"hashed_ip":"%s","header":{"accept-language":"en-US,en;q=0.9","user-agent":%q}}`,
		toxic, r.IntN(30) == 0, states[state], countries[country], ip, ua)
	return b
}

// appendString appends s as a JSON string. The generator only makes valid
// UTF-8, so escaping quotes, backslashes and control bytes is enough.
func appendString(b, s []byte) []byte {
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = fmt.Appendf(b, `\u%04x`, c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

var _ io.Writer = (*zfile)(nil)
