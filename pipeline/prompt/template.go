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

	// The fields below are set for a user's template (ParseFile) only.
	file    string   // the file it was read from, as the user named it
	user    string   // the section that is the user message ("user" or the file's body)
	spec    *Spec    // what the stage renders it with
	visible []string // the fields of spec.Data the template sees
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
	if err := t.parseHeader(name, head); err != nil {
		return nil, err
	}
	tm, err := template.New(name).Funcs(funcs()).Option("missingkey=error").Parse(padLines(head) + body)
	if err != nil {
		return nil, fmt.Errorf("parsing prompt %s: %w", name, err)
	}
	if tm.Lookup("user") == nil {
		return nil, fmt.Errorf("parsing prompt %s: no {{define \"user\"}} section", name)
	}
	t.tmpl, t.user = tm, "user"
	t.hash = hashOf(s)
	return t, nil
}

// parseHeader reads the "key: value" lines of head into t; the first must
// be "version: N" with N >= 1. what names the file in errors.
func (t *Template) parseHeader(what, head string) error {
	for i, line := range strings.Split(head, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("parsing prompt %s: line %d: want \"key: value\", got %q", what, i+1, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(t.header) == 0 && k != "version" {
			return fmt.Errorf("parsing prompt %s: line %d: the header must start with \"version: N\"", what, i+1)
		}
		t.header[k] = v
	}
	n, err := strconv.Atoi(t.header["version"])
	if err != nil || n < 1 {
		return fmt.Errorf("parsing prompt %s: version %q is not a positive integer", what, t.header["version"])
	}
	t.version = n
	return nil
}

// padLines is one newline per line of a header and its "---" line. The
// body is parsed after it, so the line numbers text/template reports are
// those of the file.
func padLines(head string) string { return strings.Repeat("\n", strings.Count(head, "\n")+2) }

// hashOf is the short hash of a prompt file's text that its version carries.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:10]
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

// Version returns name@vN+hash, e.g. "classify@v3+1a2b3c4d5e", or
// name@user+hash for a user's template (ParseFile). It goes into unit keys:
// the declared number makes intent visible, the hash of the file's text
// catches edits made without bumping it, and a user's template can never
// share a version with a shipped prompt.
func (t *Template) Version() string {
	if t.file != "" {
		return fmt.Sprintf("%s@user+%s", t.name, t.hash)
	}
	return fmt.Sprintf("%s@v%d+%s", t.name, t.version, t.hash)
}

// File returns the file a user's template was read from, as the user named
// it, and "" for a prompt shipped with ac3.
func (t *Template) File() string { return t.file }

// Header returns a header value ("" when absent).
func (t *Template) Header(key string) string { return t.header[key] }

// Render executes the template with data and returns the messages: a system
// message when the "system" section renders to non-blank text, then the user
// message. Both are trimmed of surrounding blank space. A field missing from
// data is an error, not an empty string.
//
// A user's template (ParseFile) sees only the fields of data its Spec lets
// it see; data must then be of the Spec's type.
func (t *Template) Render(data any) ([]conv.Message, error) { return t.RenderAnswer(data, "") }

// RenderAnswer is Render for a prompt whose answer has a form ac3
// prescribes and parses: contract states that form for the model (the
// tagged sections with the request's nonce, or the JSON shape). A prompt
// shipped with ac3 states the form itself, from the data's contract
// fields, and contract is not used. A user's template never sees those
// fields; ac3 appends contract to its user message, after a blank line, so
// the answer's form stays ac3's whatever the template says.
func (t *Template) RenderAnswer(data any, contract string) ([]conv.Message, error) {
	if t.file != "" {
		v, err := t.view(data)
		if err != nil {
			return nil, err
		}
		data = v
	}
	var msgs []conv.Message
	for _, sec := range []struct {
		name string
		role conv.Role
	}{{"system", conv.System}, {t.user, conv.User}} {
		if t.tmpl.Lookup(sec.name) == nil {
			continue
		}
		var b bytes.Buffer
		if err := t.tmpl.ExecuteTemplate(&b, sec.name, data); err != nil {
			return nil, fmt.Errorf("rendering prompt %s: %w", t.Version(), err)
		}
		text := strings.TrimSpace(b.String())
		if sec.role == conv.System && text == "" {
			continue
		}
		if sec.role == conv.User && t.file != "" && contract != "" {
			text = strings.TrimSpace(text + "\n\n" + contract)
		}
		msgs = append(msgs, conv.Message{Role: sec.role, Content: text})
	}
	return msgs, nil
}
