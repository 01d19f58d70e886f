package prompt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"github.com/ac3/ac3/pipeline/conv"
)

// Template is a parsed prompt file. It is safe for concurrent use.
type Template struct {
	name    string
	version int
	header  map[string]string
	hash    string
	tmpl    *template.Template
}

// funcs returns the helpers every prompt body may use: join (strings.Join),
// trim (strings.TrimSpace) and add (integer sum, for 1-based numbering).
func funcs() template.FuncMap {
	return template.FuncMap{
		"join": strings.Join,
		"trim": strings.TrimSpace,
		"add":  func(a, b int) int { return a + b },
	}
}

// Parse reads a prompt file. name identifies it in versions and errors
// (conventionally the file name without extension). It returns an error
// naming the line when the header is malformed, when the first header line
// is not "version: N" with N >= 1, when the body does not parse, or when it
// defines no "user" section.
func Parse(name string, text []byte) (*Template, error) {
	s := strings.ReplaceAll(string(text), "\r\n", "\n")
	head, body, ok := strings.Cut(s, "\n---\n")
	if !ok {
		return nil, fmt.Errorf("parsing prompt %s: no \"---\" line after the header", name)
	}
	t := &Template{name: name, header: map[string]string{}}
	for i, line := range strings.Split(head, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("parsing prompt %s: line %d: want \"key: value\", got %q", name, i+1, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(t.header) == 0 && k != "version" {
			return nil, fmt.Errorf("parsing prompt %s: line %d: the header must start with \"version: N\"", name, i+1)
		}
		t.header[k] = v
	}
	n, err := strconv.Atoi(t.header["version"])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("parsing prompt %s: version %q is not a positive integer", name, t.header["version"])
	}
	t.version = n
	tm, err := template.New(name).Funcs(funcs()).Option("missingkey=error").Parse(body)
	if err != nil {
		return nil, fmt.Errorf("parsing prompt %s: %w", name, err)
	}
	if tm.Lookup("user") == nil {
		return nil, fmt.Errorf("parsing prompt %s: no {{define \"user\"}} section", name)
	}
	t.tmpl = tm
	sum := sha256.Sum256([]byte(s))
	t.hash = hex.EncodeToString(sum[:])[:10]
	return t, nil
}

// MustParse is Parse for prompts embedded in the binary, where an error is a
// programming mistake. It panics on error.
func MustParse(name string, text []byte) *Template {
	t, err := Parse(name, text)
	if err != nil {
		panic(err)
	}
	return t
}

// Name returns the prompt's name.
func (t *Template) Name() string { return t.name }

// Version returns name@vN+hash, e.g. "classify@v3+1a2b3c4d5e". It goes into
// unit keys: the declared number makes intent visible, the hash of the file's
// text catches edits made without bumping it.
func (t *Template) Version() string {
	return fmt.Sprintf("%s@v%d+%s", t.name, t.version, t.hash)
}

// Header returns a header value ("" when absent).
func (t *Template) Header(key string) string { return t.header[key] }

// Render executes the template with data and returns the messages: a system
// message when the "system" section renders to non-blank text, then the user
// message. Both are trimmed of surrounding blank space. A field missing from
// data is an error, not an empty string.
func (t *Template) Render(data any) ([]conv.Message, error) {
	var msgs []conv.Message
	for _, sec := range []struct {
		name string
		role conv.Role
	}{{"system", conv.System}, {"user", conv.User}} {
		if t.tmpl.Lookup(sec.name) == nil {
			continue
		}
		var b bytes.Buffer
		if err := t.tmpl.ExecuteTemplate(&b, sec.name, data); err != nil {
			return nil, fmt.Errorf("rendering prompt %s: %w", t.Version(), err)
		}
		text := strings.TrimSpace(b.String())
		if text == "" && sec.role == conv.System {
			continue
		}
		msgs = append(msgs, conv.Message{Role: sec.role, Content: text})
	}
	return msgs, nil
}
