package prompt

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// check walks what t renders, its sections and the helper templates they
// call, knowing the type of dot and of every variable at each point, so an
// expression that would fail or reach what the template may not see is
// refused before anything is sent, with its line, rather than at the first
// unit. user is true for a user's template: its contract fields are then
// refused too. Expressions whose type cannot be known statically (the
// result of call, of and/or over values of different types) may not be
// read further.
func check(t *Template, s Spec, user bool) error {
	c := &checker{tmpl: t.tmpl, spec: s, user: user, used: map[string]bool{}, seen: map[string]bool{}, active: map[string]bool{}}
	for _, name := range []string{"system", t.user} {
		sec := t.tmpl.Lookup(name)
		if sec == nil || sec.Tree == nil {
			continue
		}
		if err := c.template(sec, s.Data); err != nil {
			return err
		}
	}
	var missing []string
	for _, n := range s.Needs {
		if !c.used[n] {
			missing = append(missing, "."+n)
		}
	}
	if len(missing) > 0 {
		where := t.file
		if where == "" {
			where = t.name
		}
		return fmt.Errorf("%s: the %s prompt must show %s: the answer is about it, and a prompt without it would be answered blind", where, s.Name, strings.Join(missing, " and "))
	}
	return nil
}

type checker struct {
	tmpl   *template.Template
	spec   Spec
	user   bool
	used   map[string]bool // top-level fields used
	seen   map[string]bool // template and dot type already walked
	active map[string]bool // templates being walked, to refuse recursion
	cur    *template.Template
}

// scope is what an expression sees: the type of dot and of each variable;
// nil is a type not known statically.
type scope struct {
	dot  reflect.Type
	vars map[string]reflect.Type
}

// child is a scope for a nested block: variables it declares end with it.
func (s scope) child(dot reflect.Type) scope {
	vars := make(map[string]reflect.Type, len(s.vars))
	for k, v := range s.vars {
		vars[k] = v
	}
	return scope{dot: dot, vars: vars}
}

// noData is dot inside a {{template "name"}} called without data.
type noData struct{}

var (
	noDataType = reflect.TypeFor[noData]()
	intType    = reflect.TypeFor[int]()
	boolType   = reflect.TypeFor[bool]()
	stringType = reflect.TypeFor[string]()
)

// template walks tm with dot of type dot. A template that calls itself,
// directly or not, is refused: a prompt has no use for it, and it could
// render without end.
func (c *checker) template(tm *template.Template, dot reflect.Type) error {
	if c.active[tm.Name()] {
		return fmt.Errorf("%s: template %q calls itself", location(tm, tm.Root), tm.Name())
	}
	key := tm.Name() + "\x00" + fmt.Sprint(dot)
	if c.seen[key] {
		return nil // already checked with this data
	}
	c.seen[key] = true
	c.active[tm.Name()] = true
	prev := c.cur
	c.cur = tm
	defer func() { c.cur, c.active[tm.Name()] = prev, false }()
	return c.list(tm.Root, scope{dot: dot, vars: map[string]reflect.Type{"$": dot}})
}

func (c *checker) list(l *parse.ListNode, s scope) error {
	if l == nil {
		return nil
	}
	for _, n := range l.Nodes {
		if err := c.node(n, s); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) node(n parse.Node, s scope) error {
	switch n := n.(type) {
	case *parse.TextNode, *parse.CommentNode, *parse.BreakNode, *parse.ContinueNode:
		return nil
	case *parse.ListNode:
		return c.list(n, s)
	case *parse.ActionNode:
		t, err := c.pipe(n.Pipe, s)
		if err != nil {
			return err
		}
		declare(n.Pipe, s, t)
		return nil
	case *parse.IfNode:
		return c.branch(&n.BranchNode, s, false)
	case *parse.WithNode:
		return c.branch(&n.BranchNode, s, true)
	case *parse.RangeNode:
		in := s.child(s.dot)
		t, err := c.pipe(n.Pipe, in)
		if err != nil {
			return err
		}
		key, elem, err := c.elems(t, n.Pipe)
		if err != nil {
			return err
		}
		switch len(n.Pipe.Decl) {
		case 1:
			in.vars[n.Pipe.Decl[0].Ident[0]] = elem
		case 2:
			in.vars[n.Pipe.Decl[0].Ident[0]] = key
			in.vars[n.Pipe.Decl[1].Ident[0]] = elem
		}
		if err := c.list(n.List, in.child(elem)); err != nil {
			return err
		}
		return c.list(n.ElseList, in)
	case *parse.TemplateNode:
		sub := c.tmpl.Lookup(n.Name)
		if sub == nil || sub.Tree == nil {
			return c.errorf(n, "{{template %q}}: no template of that name is defined", n.Name)
		}
		dot := noDataType
		if n.Pipe != nil {
			t, err := c.pipe(n.Pipe, s)
			if err != nil {
				return err
			}
			dot = t
		}
		return c.template(sub, dot)
	}
	return c.errorf(n, "%s: this kind of action (%T) is not supported in prompt templates", n, n)
}

// branch checks an {{if}} or a {{with}}: the pipeline and its variables in
// a scope of their own, then both lists; only {{with}} moves dot to the
// pipeline's value in its first list.
func (c *checker) branch(n *parse.BranchNode, s scope, moveDot bool) error {
	in := s.child(s.dot)
	t, err := c.pipe(n.Pipe, in)
	if err != nil {
		return err
	}
	declare(n.Pipe, in, t)
	then := in
	if moveDot {
		then = in.child(t)
	}
	if err := c.list(n.List, then); err != nil {
		return err
	}
	return c.list(n.ElseList, in)
}

// declare records the variable a pipeline declares ({{$x := …}}) or
// assigns, with the pipeline's type.
func declare(p *parse.PipeNode, s scope, t reflect.Type) {
	if p == nil {
		return
	}
	for _, v := range p.Decl {
		s.vars[v.Ident[0]] = t
	}
}

// pipe is the type of a pipeline's result: its last command's, each
// command after the first getting the previous result as its last argument.
func (c *checker) pipe(p *parse.PipeNode, s scope) (reflect.Type, error) {
	if p == nil {
		return nil, nil
	}
	var prev reflect.Type
	for i, cmd := range p.Cmds {
		t, err := c.command(cmd, s, prev, i > 0)
		if err != nil {
			return nil, err
		}
		prev = t
	}
	return prev, nil
}

func (c *checker) command(cmd *parse.CommandNode, s scope, prev reflect.Type, piped bool) (reflect.Type, error) {
	args := make([]reflect.Type, 0, len(cmd.Args))
	for _, a := range cmd.Args[1:] {
		t, err := c.arg(a, s)
		if err != nil {
			return nil, err
		}
		args = append(args, t)
	}
	if piped {
		args = append(args, prev)
	}
	if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok {
		if err := c.arity(id, args); err != nil {
			return nil, err
		}
		return c.call(id, cmd.Args[1:], args)
	}
	if len(args) > 0 && c.user {
		return nil, c.errorf(cmd, "%s: only a function takes arguments here", cmd)
	}
	return c.arg(cmd.Args[0], s)
}

// arity bounds the number of arguments of a function a prompt may call
// (max -1: no bound), so a call that could only fail when rendered is
// refused now; ok is false for a function it does not know.
func arity(name string) (bounds [2]int, ok bool) {
	switch name {
	case "len", "not", "trim":
		return [2]int{1, 1}, true
	case "index", "and", "or", "eq", "call":
		return [2]int{1, -1}, true
	case "slice":
		return [2]int{1, 4}, true
	case "ne", "lt", "le", "gt", "ge", "join", "add":
		return [2]int{2, 2}, true
	case "printf":
		return [2]int{1, -1}, true
	case "print", "println", "html", "js", "urlquery":
		return [2]int{0, -1}, true
	}
	return bounds, false
}

// argOK reports whether an argument of type t fits argument i of our own
// helpers (join, trim, add); text/template's own check their arguments.
func argOK(name string, i int, t reflect.Type) bool {
	switch {
	case name == "add":
		return isInt(t)
	case name == "join" && i == 0:
		return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String
	case name == "join" || name == "trim":
		return isString(t)
	}
	return true
}

func isInt(t reflect.Type) bool    { return t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64 }
func isString(t reflect.Type) bool { return t.Kind() == reflect.String }

func (c *checker) arity(id *parse.IdentifierNode, args []reflect.Type) error {
	a, ok := arity(id.Ident)
	if !ok {
		return nil
	}
	if len(args) < a[0] || (a[1] >= 0 && len(args) > a[1]) {
		return c.errorf(id, "%s takes %s, not %d", id.Ident, argCount(a), len(args))
	}
	for i, t := range args {
		if t != nil && !argOK(id.Ident, i, t) {
			return c.errorf(id, "%s: argument %d is a %s", id.Ident, i+1, kindWord(t))
		}
	}
	return nil
}

func argCount(a [2]int) string {
	switch {
	case a[0] == a[1]:
		return fmt.Sprintf("%d argument(s)", a[0])
	case a[1] < 0:
		return fmt.Sprintf("at least %d argument(s)", a[0])
	}
	return fmt.Sprintf("%d to %d arguments", a[0], a[1])
}

func (c *checker) arg(n parse.Node, s scope) (reflect.Type, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return s.dot, nil
	case *parse.FieldNode:
		return c.fields(s.dot, n.Ident, n)
	case *parse.VariableNode:
		return c.fields(s.vars[n.Ident[0]], n.Ident[1:], n)
	case *parse.ChainNode:
		t, err := c.arg(n.Node, s)
		if err != nil {
			return nil, err
		}
		return c.fields(t, n.Field, n)
	case *parse.PipeNode:
		return c.pipe(n, s)
	case *parse.IdentifierNode:
		return c.call(n, nil, nil)
	case *parse.StringNode:
		return stringType, nil
	case *parse.BoolNode:
		return boolType, nil
	case *parse.NumberNode:
		if n.IsInt {
			return intType, nil
		}
		if n.IsFloat {
			return reflect.TypeFor[float64](), nil
		}
	}
	return nil, nil
}

// call is the result type of a function call; for index, the root data is
// indexed by field name, which must be a quoted constant.
func (c *checker) call(id *parse.IdentifierNode, argNodes []parse.Node, args []reflect.Type) (reflect.Type, error) {
	switch id.Ident {
	case "len", "add":
		return intType, nil
	case "not", "eq", "ne", "lt", "le", "gt", "ge":
		return boolType, nil
	case "print", "printf", "println", "html", "js", "urlquery", "join", "trim":
		return stringType, nil
	case "slice":
		if len(args) > 0 {
			return args[0], nil
		}
	case "and", "or":
		if len(args) > 0 && !slices.ContainsFunc(args, func(t reflect.Type) bool { return t != args[0] }) {
			return args[0], nil
		}
	case "index":
		if len(args) == 0 {
			return nil, nil
		}
		t := args[0]
		for i := 1; i < len(args); i++ {
			if t == c.spec.Data {
				var key *parse.StringNode
				if i < len(argNodes) {
					key, _ = argNodes[i].(*parse.StringNode)
				}
				if key == nil {
					return nil, c.errorf(id, "index on the prompt's data takes a field name in quotes")
				}
				ft, err := c.root(key.Text, key)
				if err != nil {
					return nil, err
				}
				t = ft
				continue
			}
			_, elem, err := c.elems(t, id)
			if err != nil {
				return nil, err
			}
			t = elem
		}
		return t, nil
	}
	return nil, nil
}

// fields follows a chain of field (or method) names from a value of type t.
func (c *checker) fields(t reflect.Type, names []string, n parse.Node) (reflect.Type, error) {
	for _, name := range names {
		var err error
		switch t {
		case nil:
			return nil, c.errorf(n, "%s: the type of what .%s is read from cannot be known here; read the field from a value the prompt is given", n, name)
		case noDataType:
			return nil, c.errorf(n, "%s: this template was called without data; write {{template \"name\" .}}", n)
		case c.spec.Data:
			t, err = c.root(name, n)
		default:
			t, err = c.field(t, name, n)
		}
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// root resolves a field of the prompt's data.
func (c *checker) root(name string, n parse.Node) (reflect.Type, error) {
	if c.user && slices.Contains(c.spec.Contract, name) {
		return nil, c.errorf(n, "%s: .%s is the answer's form, which ac3 adds to the end of the prompt itself (tagged sections carrying the request's nonce, or the JSON shape the request's response_format enforces); remove it from the template", n, name)
	}
	if why, ok := c.spec.Withheld[name]; ok {
		return nil, c.errorf(n, "%s: the %s prompt does not get .%s: %s", n, c.spec.Name, name, why)
	}
	f, ok := c.spec.Data.FieldByName(name)
	if !ok || !f.IsExported() || len(f.Index) != 1 {
		have := c.spec.Fields()
		if !c.user {
			have = exported(c.spec.Data)
		}
		return nil, c.errorf(n, "%s: the %s prompt has no field .%s; it has %s", n, c.spec.Name, name, dotted(have))
	}
	c.used[name] = true
	return f.Type, nil
}

// field resolves a field or method of a value of type t (as text/template
// does: a method first, then a struct field or a string-keyed map entry).
func (c *checker) field(t reflect.Type, name string, n parse.Node) (reflect.Type, error) {
	for _, mt := range []reflect.Type{t, reflect.PointerTo(t)} {
		if m, ok := mt.MethodByName(name); ok && mt.Kind() != reflect.Interface {
			if m.Type.NumOut() == 0 {
				return nil, c.errorf(n, "%s: %s returns nothing to show", n, name)
			}
			return m.Type.Out(0), nil
		}
	}
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch base.Kind() {
	case reflect.Struct:
		if f, ok := base.FieldByName(name); ok && f.IsExported() {
			return f.Type, nil
		}
		return nil, c.errorf(n, "%s: no field .%s here; there is %s", n, name, dotted(exported(base)))
	case reflect.Map:
		if base.Key().Kind() == reflect.String {
			return base.Elem(), nil
		}
	}
	return nil, c.errorf(n, "%s: .%s cannot be read from a %s", n, name, kindWord(base))
}

// elems is the key and element types of ranging over (or indexing) a value
// of type t.
func (c *checker) elems(t reflect.Type, n parse.Node) (key, elem reflect.Type, err error) {
	switch {
	case t == nil:
		return nil, nil, nil
	case t == c.spec.Data:
		return nil, nil, c.errorf(n, "%s: the prompt's data is not a list; range over one of its fields (%s)", n, dotted(c.spec.Fields()))
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return intType, t.Elem(), nil
	case reflect.Map:
		return t.Key(), t.Elem(), nil
	case reflect.Interface:
		return nil, nil, nil
	}
	return nil, nil, c.errorf(n, "%s: a %s is not a list", n, kindWord(t))
}

func (c *checker) errorf(n parse.Node, format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{location(c.cur, n)}, args...)...)
}

// exported lists t's exported fields (t a struct).
func exported(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() {
			out = append(out, f.Name)
		}
	}
	return out
}

func dotted(names []string) string {
	if len(names) == 0 {
		return "no fields"
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "." + n
	}
	return strings.Join(out, ", ")
}

// kindWord names a kind of value the way a template author thinks of it.
func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true/false value"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Struct:
		return "record"
	case reflect.Map:
		return "map"
	}
	if t.Kind() >= reflect.Int && t.Kind() <= reflect.Complex128 {
		return "number"
	}
	return t.Kind().String()
}
