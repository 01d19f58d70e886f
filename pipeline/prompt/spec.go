package prompt

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// Spec declares a prompt that a user may replace with a template file of
// their own: what the stage renders it with, what a template must use and
// what it may not see. A stage exports one Spec per replaceable prompt.
type Spec struct {
	// Name is the prompt's name: that of the file shipped with ac3 and the
	// key under the stage's "prompts:" in the config.
	Name string
	// Data is the type the stage renders the prompt with: a struct, passed
	// by value.
	Data reflect.Type
	// Needs are the fields of Data a template must use: the material the
	// stage's answer is about (the conversation, the message to label).
	// A template that leaves one out would get answers about nothing.
	Needs []string
	// Contract are the fields of Data that carry the answer's form (its
	// layout, its tags with the request's nonce, whether it is JSON). They
	// are ac3's: a user's template is refused when it uses one, never sees
	// them, and ac3 appends the form to its user message itself (see
	// Template.RenderAnswer).
	Contract []string
	// Withheld names fields a user's template may not use, with the reason,
	// which the refusal quotes. A name may be a field of Data that only
	// ac3's own prompt uses (the right answer of a probe), or a name that
	// is not in Data on purpose (the assistant turns, for a step that must
	// never see them), so that asking for it gets the reason rather than
	// "no such field".
	Withheld map[string]string
	// UserOnly says the prompt is a single user message (it is sent after
	// a context that already has its own system message): a template with
	// a "system" section is refused.
	UserOnly bool
}

// Fields lists the fields of s.Data a user's template sees: the exported
// ones, less the contract and the withheld ones, in declaration order.
func (s Spec) Fields() []string {
	var out []string
	for i := range s.Data.NumField() {
		f := s.Data.Field(i)
		if !f.IsExported() || slices.Contains(s.Contract, f.Name) {
			continue
		}
		if _, ok := s.Withheld[f.Name]; ok {
			continue
		}
		out = append(out, f.Name)
	}
	return out
}

// LoadFile reads a user's template from path and parses it with ParseFile,
// naming the file as path in versions' place and errors.
func LoadFile(s Spec, path string) (*Template, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading prompt file: %w", err)
	}
	return ParseFile(s, path, text)
}

// ParseFile parses a user's template for the prompt s declares and checks
// it against s before anything is sent. file names it in errors.
//
// The file is a text/template. It may start with the header a shipped
// prompt has ("version: N" ... "---"). Its user message is its
// {{define "user"}} section, or, when it defines none, its whole text; an
// optional {{define "system"}} section is the system message. The same
// helpers as in shipped prompts are available (join, trim, add, and
// text/template's own).
//
// It returns an error naming the file and, where there is one, the line
// when the template does not parse; has text outside its sections; uses a
// field the stage does not give it (a contract field, a withheld one, or
// one that does not exist, also inside range and with blocks and helper
// templates); calls a template it does not define; leaves out a field in
// s.Needs; or has no user message.
func ParseFile(s Spec, file string, text []byte) (*Template, error) {
	if s.Data == nil || s.Data.Kind() != reflect.Struct {
		return nil, fmt.Errorf("parsing prompt file %s: the %s prompt declares no data type", file, s.Name)
	}
	src := strings.ReplaceAll(string(text), "\r\n", "\n")
	t := &Template{name: s.Name, file: file, header: map[string]string{}, spec: &s, visible: s.Fields(), hash: hashOf(src)}
	body, pad := src, ""
	if strings.HasPrefix(src, "version:") {
		head, rest, ok := strings.Cut(src, "\n---\n")
		if !ok {
			return nil, fmt.Errorf("%s:1: the file starts with a \"version:\" header but has no \"---\" line after it", file)
		}
		if err := t.parseHeader(file, head); err != nil {
			return nil, err
		}
		body, pad = rest, padLines(head)
	}
	tm, err := template.New(file).Funcs(funcs()).Option("missingkey=error").Parse(pad + body)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "template: "))
	}
	t.tmpl = tm
	root := tm // the file's text outside any {{define}}
	stray := firstText(root)
	switch {
	case tm.Lookup("user") != nil && stray != nil:
		return nil, fmt.Errorf("%s: text outside the {{define}} sections is in no message; move it into the \"user\" or \"system\" section", location(root, stray))
	case tm.Lookup("user") != nil:
		t.user = "user"
	case stray != nil:
		t.user = file
	default:
		return nil, fmt.Errorf("%s: no user message: write the prompt's text, or a {{define \"user\"}} section", file)
	}
	if s.UserOnly && tm.Lookup("system") != nil {
		return nil, fmt.Errorf("%s: the %s prompt is a single user message, sent after a context that has its own system message; remove the \"system\" section", location(tm.Lookup("system"), tm.Lookup("system").Root), s.Name)
	}
	if err := check(t, s, true); err != nil {
		return nil, err
	}
	return t, nil
}

// Check checks a prompt shipped with ac3 against the Spec a user's template
// for it would meet, the contract fields allowed: every field it uses exists
// in s.Data, and it uses every field in s.Needs. A stage's tests call it so
// its declaration cannot drift from its prompt.
func Check(t *Template, s Spec) error { return check(t, s, false) }

// firstText returns the first node of t's body that renders something (a
// text that is not blank, or any action), or nil when there is none.
func firstText(t *template.Template) parse.Node {
	if t == nil || t.Tree == nil || t.Root == nil {
		return nil
	}
	for _, n := range t.Root.Nodes {
		if tx, ok := n.(*parse.TextNode); ok && strings.TrimSpace(string(tx.Text)) == "" {
			continue
		}
		if _, ok := n.(*parse.CommentNode); ok {
			continue
		}
		return n
	}
	return nil
}

// location is where n is: "file:line:col".
func location(t *template.Template, n parse.Node) string {
	loc, _ := t.ErrorContext(n)
	return loc
}

// view is what a user's template is rendered with: the fields of data its
// Spec lets it see, by name. Whatever else data holds is not in it, so no
// expression of the template, {{.}} included, can reach it.
func (t *Template) view(data any) (map[string]any, error) {
	v := reflect.ValueOf(data)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if !v.IsValid() || v.Type() != t.spec.Data {
		return nil, fmt.Errorf("rendering prompt %s: the stage passed %T, not the %s its declaration names", t.Version(), data, t.spec.Data)
	}
	m := make(map[string]any, len(t.visible))
	for _, f := range t.visible {
		m[f] = v.FieldByName(f).Interface()
	}
	return m, nil
}
