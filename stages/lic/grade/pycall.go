package grade

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Values parsed from calls, Python literals or JSON are plain Go values:
// nil (None/null), bool, int64, float64, string, []any (a list), Tuple and
// *Dict. BFCL's checker tells int, float, bool, list and tuple apart, so
// these types keep those distinctions.

// Tuple is a Python tuple.
type Tuple []any

// Dict is a dictionary with its keys in the order written. Keys are
// strings, except for Python dicts written with other keys.
type Dict struct {
	Keys []any
	Vals []any
}

// Get returns the value of the string key k.
func (d *Dict) Get(k string) (any, bool) {
	for i, key := range d.Keys {
		if s, ok := key.(string); ok && s == k {
			return d.Vals[i], true
		}
	}
	return nil, false
}

// Call is one function call of an actions answer.
type Call struct {
	// Name is the function's name, dotted when it is a method path
	// ("random_forest.train").
	Name string
	// Args are the keyword arguments in the order written.
	Args []Arg
	// Positional holds positional arguments. BFCL matches keyword arguments
	// only, so a call that needs them fails.
	Positional []any
}

// Arg is one keyword argument.
type Arg struct {
	Name  string
	Value any
}

// ParsePythonCalls parses Python call syntax as BFCL's answers use it:
// one call, a list or tuple of calls ("[f(a=1), g(b=[2, 3])]"), or calls
// separated by commas, semicolons or new lines. Argument values may be
// literals (numbers, strings, True/False/None, lists, tuples, dicts),
// names (read as their text, as BFCL does), arithmetic on numbers (which
// is evaluated, as BFCL does), and nested calls (a call with keyword
// arguments becomes a dict {name: {args}}, one without becomes its text).
// Anything else (lambdas, comprehensions, sets, starred arguments) is an
// error. An input holding no call at all is an error too.
func ParsePythonCalls(s string) ([]*Call, error) {
	toks, err := lexPython(s)
	if err != nil {
		return nil, err
	}
	p := &pyParser{src: s, toks: toks}
	var calls []*Call
	p.skipSeparators()
	if p.peek().kind == pyOp && (p.peek().text == "[" || p.peek().text == "(") && p.wrapsAll() {
		open := p.next().text
		close := map[string]string{"[": "]", "(": ")"}[open]
		for {
			p.skipSeparators()
			if p.peek().kind == pyOp && p.peek().text == close {
				p.next()
				break
			}
			c, err := p.topCall()
			if err != nil {
				return nil, err
			}
			calls = append(calls, c)
			p.skipSeparators()
		}
		p.skipSeparators()
		if p.peek().kind != pyEOF {
			return nil, p.errorf("unexpected %q after the list of calls", p.peek().text)
		}
	} else {
		for p.peek().kind != pyEOF {
			c, err := p.topCall()
			if err != nil {
				return nil, err
			}
			calls = append(calls, c)
			sep := p.skipSeparators()
			if !sep && p.peek().kind != pyEOF {
				return nil, p.errorf("unexpected %q after a call", p.peek().text)
			}
		}
	}
	if len(calls) == 0 {
		return nil, errors.New("no function call")
	}
	return calls, nil
}

type pyKind uint8

const (
	pyEOF pyKind = iota
	pyName
	pyNumber
	pyStr
	pyOp
	pyNewline
)

type pyTok struct {
	kind  pyKind
	text  string // source text (for strings: the literal with quotes)
	value any    // decoded string or number
	pos   int    // byte offset in the source
	end   int
}

const maxPyDepth = 200

// lexPython tokenises the subset of Python that call answers use. New
// lines are tokens only outside brackets, where they separate calls.
func lexPython(s string) ([]pyTok, error) {
	var (
		out   []pyTok
		depth int
	)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			if depth == 0 {
				out = append(out, pyTok{kind: pyNewline, text: "\n", pos: i, end: i + 1})
			}
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			j, v, err := lexPyNumber(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, pyTok{kind: pyNumber, text: s[i:j], value: v, pos: i, end: j})
			i = j
		case isPyNameStart(s, i):
			j := i
			for j < len(s) && isPyNameChar(s, j) {
				_, w := utf8.DecodeRuneInString(s[j:])
				j += w
			}
			// string prefixes: r"", b'', f"", rb"", u''
			if j < len(s) && (s[j] == '\'' || s[j] == '"') && j-i <= 2 && isStringPrefix(s[i:j]) {
				k, v, err := lexPyString(s, j, strings.ToLower(s[i:j]))
				if err != nil {
					return nil, err
				}
				out = append(out, pyTok{kind: pyStr, text: s[i:k], value: v, pos: i, end: k})
				i = k
				continue
			}
			out = append(out, pyTok{kind: pyName, text: s[i:j], pos: i, end: j})
			i = j
		case c == '\'' || c == '"':
			k, v, err := lexPyString(s, i, "")
			if err != nil {
				return nil, err
			}
			out = append(out, pyTok{kind: pyStr, text: s[i:k], value: v, pos: i, end: k})
			i = k
		default:
			op := ""
			for _, o := range []string{"**", "//", "...", "->", "==", "!=", "<=", ">=", ":="} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				r, w := utf8.DecodeRuneInString(s[i:])
				if r == utf8.RuneError && w == 1 {
					return nil, fmt.Errorf("invalid UTF-8 at byte %d", i)
				}
				op = s[i : i+w]
			}
			switch op {
			case "(", "[", "{":
				depth++
				if depth > maxPyDepth {
					return nil, errors.New("brackets nested too deeply")
				}
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			}
			out = append(out, pyTok{kind: pyOp, text: op, pos: i, end: i + len(op)})
			i += len(op)
		}
	}
	out = append(out, pyTok{kind: pyEOF, pos: len(s), end: len(s)})
	return out, nil
}

func isStringPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "r", "u", "b", "f", "br", "rb", "fr", "rf":
		return true
	}
	return false
}

func isPyNameStart(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || unicode.IsLetter(r)
}

func isPyNameChar(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func lexPyNumber(s string, i int) (int, any, error) {
	j := i
	if s[j] == '0' && j+1 < len(s) && strings.IndexByte("xXoObB", s[j+1]) >= 0 {
		base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[s[j+1]|0x20]
		j += 2
		k := j
		for k < len(s) && (s[k] == '_' || isHexDigit(s[k])) {
			k++
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(s[j:k], "_", ""), base, 64)
		if err != nil {
			return 0, nil, fmt.Errorf("bad number %q", s[i:k])
		}
		return k, n, nil
	}
	isFloat := false
	for j < len(s) && (isDigit(s[j]) || s[j] == '_') {
		j++
	}
	if j < len(s) && s[j] == '.' && !(j+1 < len(s) && s[j+1] == '.') {
		isFloat = true
		j++
		for j < len(s) && (isDigit(s[j]) || s[j] == '_') {
			j++
		}
	}
	if k, ok := scanExponent(s, j); ok {
		j, isFloat = k, true
	}
	if j < len(s) && (s[j] == 'j' || s[j] == 'J') {
		return 0, nil, fmt.Errorf("complex number %q is not supported", s[i:j+1])
	}
	lit := strings.ReplaceAll(s[i:j], "_", "")
	if !isFloat {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return j, n, nil
		}
		// beyond int64: keep the magnitude as a float rather than fail
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, nil, fmt.Errorf("bad number %q", s[i:j])
	}
	return j, f, nil
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// lexPyString reads a string literal starting at the quote s[i].
func lexPyString(s string, i int, prefix string) (int, string, error) {
	raw := strings.Contains(prefix, "r")
	q := s[i]
	triple := strings.HasPrefix(s[i:], strings.Repeat(string(q), 3))
	j := i + 1
	if triple {
		j = i + 3
	}
	var b strings.Builder
	for j < len(s) {
		c := s[j]
		if c == q {
			if !triple {
				return j + 1, b.String(), nil
			}
			if strings.HasPrefix(s[j:], strings.Repeat(string(q), 3)) {
				return j + 3, b.String(), nil
			}
		}
		if c == '\n' && !triple {
			return 0, "", fmt.Errorf("string at byte %d is not closed on its line", i)
		}
		if c == '\\' && j+1 < len(s) {
			if raw {
				b.WriteByte(c)
				b.WriteByte(s[j+1])
				j += 2
				continue
			}
			n, err := pyEscape(s, j, &b)
			if err != nil {
				return 0, "", err
			}
			j = n
			continue
		}
		b.WriteByte(c)
		j++
	}
	return 0, "", fmt.Errorf("string at byte %d is not closed", i)
}

// pyEscape decodes the escape sequence at s[j] == '\\' and returns the
// index after it. Unknown escapes stay as written, as in Python.
func pyEscape(s string, j int, b *strings.Builder) (int, error) {
	e := s[j+1]
	switch e {
	case '\n':
		return j + 2, nil
	case '\\', '\'', '"':
		b.WriteByte(e)
	case 'n':
		b.WriteByte('\n')
	case 't':
		b.WriteByte('\t')
	case 'r':
		b.WriteByte('\r')
	case 'a':
		b.WriteByte('\a')
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'v':
		b.WriteByte('\v')
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
		if j+2+n > len(s) {
			return 0, fmt.Errorf("truncated \\%c escape", e)
		}
		v, err := strconv.ParseUint(s[j+2:j+2+n], 16, 32)
		if err != nil || v > unicode.MaxRune {
			return 0, fmt.Errorf("bad \\%c escape", e)
		}
		b.WriteRune(rune(v))
		return j + 2 + n, nil
	case '0', '1', '2', '3', '4', '5', '6', '7':
		k := j + 1
		for k < len(s) && k < j+4 && s[k] >= '0' && s[k] <= '7' {
			k++
		}
		v, _ := strconv.ParseUint(s[j+1:k], 8, 32)
		b.WriteRune(rune(v))
		return k, nil
	default:
		b.WriteByte('\\')
		b.WriteByte(e)
	}
	return j + 2, nil
}

type pyParser struct {
	src   string
	toks  []pyTok
	pos   int
	depth int
}

func (p *pyParser) peek() pyTok { return p.toks[p.pos] }

func (p *pyParser) next() pyTok {
	t := p.toks[p.pos]
	if t.kind != pyEOF {
		p.pos++
	}
	return t
}

func (p *pyParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.peek().pos, fmt.Sprintf(format, args...))
}

func (p *pyParser) isOp(s string) bool {
	t := p.peek()
	return t.kind == pyOp && t.text == s
}

func (p *pyParser) expectOp(s string) error {
	if !p.isOp(s) {
		return p.errorf("expected %q, found %q", s, p.peek().text)
	}
	p.next()
	return nil
}

// skipSeparators skips commas, semicolons and new lines between calls and
// reports whether it skipped any.
func (p *pyParser) skipSeparators() bool {
	skipped := false
	for {
		t := p.peek()
		if t.kind == pyNewline || t.kind == pyOp && (t.text == "," || t.text == ";") {
			p.next()
			skipped = true
			continue
		}
		return skipped
	}
}

// wrapsAll reports whether the bracket at the current token closes at the
// last token, so that it wraps the whole answer.
func (p *pyParser) wrapsAll() bool {
	end, ok := p.closing(p.pos)
	if !ok {
		return false
	}
	for k := end + 1; k < len(p.toks); k++ {
		if k := p.toks[k]; k.kind != pyEOF && k.kind != pyNewline && !(k.kind == pyOp && k.text == ";") {
			return false
		}
	}
	return true
}

// closing finds the token that closes the bracket opened at toks[from] (or
// at the first bracket after it), any kind of bracket counting: its index
// and true, or the index of the end of input and false. wrapsAll looks
// ahead with it and skipBracket moves past it, so the two agree on where a
// bracket ends.
func (p *pyParser) closing(from int) (int, bool) {
	depth := 0
	for i := from; i < len(p.toks); i++ {
		t := p.toks[i]
		if t.kind == pyEOF {
			return i, false
		}
		if t.kind != pyOp {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return i, true
			}
		}
	}
	return len(p.toks) - 1, false
}

func (p *pyParser) topCall() (*Call, error) {
	start := p.peek()
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	c, ok := v.(*Call)
	if !ok {
		return nil, fmt.Errorf("at byte %d: expected a function call, found %s", start.pos, describe(v))
	}
	return c, nil
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return "a name or string"
	case nil:
		return "None"
	case []any:
		return "a list"
	}
	return "a value"
}

// expr parses an expression: arithmetic over unary operators, powers and
// primaries. Top-level calls come back as *Call; everything else as a
// value.
func (p *pyParser) expr() (any, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxPyDepth {
		return nil, p.errorf("expression nested too deeply")
	}
	left, err := p.binary(p.term, "+", "-")
	if err != nil {
		return nil, err
	}
	if p.peek().kind == pyName && (p.peek().text == "if" || p.peek().text == "for" || p.peek().text == "and" || p.peek().text == "or") {
		return nil, p.errorf("%q expressions are not supported", p.peek().text)
	}
	return left, nil
}

func (p *pyParser) term() (any, error) {
	return p.binary(p.unary, "*", "/", "//", "%")
}

// binary parses operand (op operand)… for the operators ops, folding left
// to right: one level of precedence, as expr and term have.
func (p *pyParser) binary(operand func() (any, error), ops ...string) (any, error) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for slices.ContainsFunc(ops, p.isOp) {
		op := p.next().text
		right, err := operand()
		if err != nil {
			return nil, err
		}
		if left, err = arith(op, left, right); err != nil {
			return nil, err
		}
	}
	return left, nil
}

func (p *pyParser) unary() (any, error) {
	if p.isOp("-") || p.isOp("+") {
		op := p.next().text
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxPyDepth {
			return nil, p.errorf("expression nested too deeply")
		}
		v, err := p.unary()
		if err != nil {
			return nil, err
		}
		if op == "+" {
			if !isNumber(v) {
				return nil, p.errorf("unary + on %s", describe(v))
			}
			return v, nil
		}
		return arith("-", int64(0), v)
	}
	return p.power()
}

func (p *pyParser) power() (any, error) {
	base, err := p.primary()
	if err != nil {
		return nil, err
	}
	if p.isOp("**") {
		p.next()
		exp, err := p.unary()
		if err != nil {
			return nil, err
		}
		return arith("**", base, exp)
	}
	return base, nil
}

// primary parses an atom and its trailers: calls, attributes, subscripts.
func (p *pyParser) primary() (any, error) {
	start := p.peek().pos
	t := p.peek()
	var (
		v    any
		name string // dotted name so far, while the primary is one
		err  error
	)
	if t.kind == pyName {
		p.next()
		switch t.text {
		case "True":
			v = true
		case "False":
			v = false
		case "None":
			v = nil
		case "lambda", "not", "await", "yield":
			return nil, fmt.Errorf("at byte %d: %q is not supported", t.pos, t.text)
		default:
			name = t.text
			v = t.text
		}
	} else if v, err = p.atom(); err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isOp("."):
			p.next()
			a := p.next()
			if a.kind != pyName {
				return nil, fmt.Errorf("at byte %d: expected a name after '.'", a.pos)
			}
			if name != "" {
				name += "." + a.text
				v = name
			} else {
				v = strings.Join(strings.Fields(p.src[start:a.end]), " ")
			}
		case p.isOp("("):
			if name == "" {
				return nil, p.errorf("only named functions can be called")
			}
			c, err := p.callArgs(name)
			if err != nil {
				return nil, err
			}
			v, name = c, ""
			// a call used as a value (not at the top) is turned into a
			// value by the caller; a trailer on a call is source text.
			if p.isOp(".") || p.isOp("[") || p.isOp("(") {
				return nil, p.errorf("calls on call results are not supported")
			}
			return v, nil
		case p.isOp("["):
			if err := p.skipBracket("[", "]"); err != nil {
				return nil, err
			}
			v, name = strings.Join(strings.Fields(p.src[start:p.toks[p.pos-1].end]), " "), ""
		default:
			return v, nil
		}
	}
}

// asValue turns a nested call into the value BFCL gives it.
func asValue(v any, src string) any {
	c, ok := v.(*Call)
	if !ok {
		return v
	}
	if len(c.Args) == 0 {
		return strings.Join(strings.Fields(src), " ")
	}
	args := &Dict{}
	for _, a := range c.Args {
		args.Keys = append(args.Keys, a.Name)
		args.Vals = append(args.Vals, a.Value)
	}
	return &Dict{Keys: []any{c.Name}, Vals: []any{args}}
}

// value parses an expression used as a value (an argument, an element).
func (p *pyParser) value() (any, error) {
	start := p.peek().pos
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	return asValue(v, p.src[start:p.toks[p.pos-1].end]), nil
}

func (p *pyParser) callArgs(name string) (*Call, error) {
	p.next() // (
	c := &Call{Name: name}
	seen := map[string]bool{}
	for !p.isOp(")") {
		if p.peek().kind == pyEOF {
			return nil, p.errorf("call to %s is not closed", name)
		}
		if p.isOp("*") || p.isOp("**") {
			return nil, p.errorf("starred arguments are not supported")
		}
		if p.peek().kind == pyName && p.toks[p.pos+1].kind == pyOp && p.toks[p.pos+1].text == "=" {
			k := p.next().text
			p.next() // =
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			if seen[k] {
				return nil, p.errorf("keyword argument %q repeated", k)
			}
			seen[k] = true
			c.Args = append(c.Args, Arg{Name: k, Value: v})
		} else {
			if len(c.Args) > 0 {
				return nil, p.errorf("positional argument follows keyword argument")
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			c.Positional = append(c.Positional, v)
		}
		if p.isOp(",") {
			p.next()
			continue
		}
		if !p.isOp(")") {
			return nil, p.errorf("expected ',' or ')' in the call to %s, found %q", name, p.peek().text)
		}
	}
	p.next() // )
	return c, nil
}

// atom parses literals and bracketed displays.
func (p *pyParser) atom() (any, error) {
	t := p.peek()
	switch t.kind {
	case pyNumber:
		p.next()
		return t.value, nil
	case pyStr:
		p.next()
		s := t.value.(string)
		for p.peek().kind == pyStr { // implicit concatenation
			s += p.next().value.(string)
		}
		return s, nil
	case pyOp:
		switch t.text {
		case "[":
			p.next()
			items, _, err := p.items("]")
			if err != nil {
				return nil, err
			}
			if items == nil {
				items = []any{}
			}
			return items, nil
		case "(":
			p.next()
			items, comma, err := p.items(")")
			if err != nil {
				return nil, err
			}
			if len(items) == 1 && !comma {
				return items[0], nil
			}
			return Tuple(items), nil
		case "{":
			return p.dict()
		case "...":
			p.next()
			return "...", nil
		}
	case pyEOF:
		return nil, p.errorf("unexpected end of input")
	}
	return nil, p.errorf("unexpected %q", t.text)
}

// items parses comma-separated values up to close; comma reports a
// trailing or separating comma (which makes "(x,)" a tuple).
func (p *pyParser) items(close string) ([]any, bool, error) {
	var (
		out   []any
		comma bool
	)
	for !p.isOp(close) {
		if p.peek().kind == pyEOF {
			return nil, false, p.errorf("%q is not closed", close)
		}
		if p.isOp("*") {
			return nil, false, p.errorf("starred items are not supported")
		}
		v, err := p.value()
		if err != nil {
			return nil, false, err
		}
		out = append(out, v)
		if p.peek().kind == pyName && p.peek().text == "for" {
			return nil, false, p.errorf("comprehensions are not supported")
		}
		if p.isOp(",") {
			p.next()
			comma = true
			continue
		}
		if !p.isOp(close) {
			return nil, false, p.errorf("expected ',' or %q, found %q", close, p.peek().text)
		}
	}
	p.next()
	return out, comma, nil
}

func (p *pyParser) dict() (any, error) {
	p.next() // {
	d := &Dict{}
	for !p.isOp("}") {
		if p.peek().kind == pyEOF {
			return nil, p.errorf("'{' is not closed")
		}
		if p.isOp("**") {
			return nil, p.errorf("dict unpacking is not supported")
		}
		k, err := p.value()
		if err != nil {
			return nil, err
		}
		if !p.isOp(":") {
			return nil, p.errorf("sets are not supported")
		}
		p.next()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		d.Keys = append(d.Keys, k)
		d.Vals = append(d.Vals, v)
		if p.isOp(",") {
			p.next()
			continue
		}
		if !p.isOp("}") {
			return nil, p.errorf("expected ',' or '}', found %q", p.peek().text)
		}
	}
	p.next()
	return d, nil
}

func (p *pyParser) skipBracket(open, close string) error {
	end, ok := p.closing(p.pos)
	p.pos = end
	if !ok {
		return p.errorf("%q is not closed", open)
	}
	p.pos++
	return nil
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64, bool:
		return true
	}
	return false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

const maxStringRepeat = 1 << 16

// arith evaluates a binary operator the way Python would on numbers
// (int stays int unless it overflows or divides) and on strings (+ joins,
// * repeats).
func arith(op string, a, b any) (any, error) {
	if sa, ok := a.(string); ok {
		switch {
		case op == "+":
			if sb, ok := b.(string); ok {
				return sa + sb, nil
			}
		case op == "*":
			if n, ok := toInt(b); ok && n >= 0 && int64(len(sa))*n <= maxStringRepeat {
				return strings.Repeat(sa, int(n)), nil
			}
		}
		return nil, fmt.Errorf("cannot evaluate %q on a string", op)
	}
	if !isNumber(a) || !isNumber(b) {
		return nil, fmt.Errorf("cannot evaluate %q on %s and %s", op, describe(a), describe(b))
	}
	ia, aInt := toInt(a)
	ib, bInt := toInt(b)
	if aInt && bInt {
		switch op {
		case "+":
			if r := ia + ib; (r > ia) == (ib > 0) {
				return r, nil
			}
		case "-":
			if r := ia - ib; (r < ia) == (ib > 0) {
				return r, nil
			}
		case "*":
			if ia == 0 || ib == 0 {
				return int64(0), nil
			}
			if r := ia * ib; r/ib == ia && !(ia == -1 && ib == math.MinInt64) && !(ib == -1 && ia == math.MinInt64) {
				return r, nil
			}
		case "//":
			if ib == 0 {
				return nil, errors.New("division by zero")
			}
			if !(ia == math.MinInt64 && ib == -1) {
				q := ia / ib
				if (ia%ib != 0) && ((ia < 0) != (ib < 0)) {
					q--
				}
				return q, nil
			}
		case "%":
			if ib == 0 {
				return nil, errors.New("division by zero")
			}
			if ib != -1 {
				m := ia % ib
				if m != 0 && (m < 0) != (ib < 0) {
					m += ib
				}
				return m, nil
			}
			return int64(0), nil
		case "**":
			if ib >= 0 {
				r := math.Pow(float64(ia), float64(ib))
				if math.Abs(r) < 1<<53 {
					return int64(r), nil
				}
			}
		}
	}
	fa, fb := toFloat(a), toFloat(b)
	switch op {
	case "+":
		return fa + fb, nil
	case "-":
		return fa - fb, nil
	case "*":
		return fa * fb, nil
	case "/":
		if fb == 0 {
			return nil, errors.New("division by zero")
		}
		return fa / fb, nil
	case "//":
		if fb == 0 {
			return nil, errors.New("division by zero")
		}
		return math.Floor(fa / fb), nil
	case "%":
		if fb == 0 {
			return nil, errors.New("division by zero")
		}
		m := math.Mod(fa, fb)
		if m != 0 && (m < 0) != (fb < 0) {
			m += fb
		}
		return m, nil
	case "**":
		return math.Pow(fa, fb), nil
	}
	return nil, fmt.Errorf("operator %q is not supported", op)
}
