package grade

import (
	"fmt"
	"regexp"
	"strings"
)

// funcDoc is what the checker needs of one function's documentation.
type funcDoc struct {
	name     string
	params   map[string]paramDoc
	required []string
}

type paramDoc struct {
	typ   string // BFCL type name: string, integer, float, boolean, array, tuple, dict, any
	items string // element type of an array or tuple
}

// RefCall is one expected call of an actions instance: for each argument,
// the values that count as correct. An empty string among them means the
// argument may be left out.
type RefCall struct {
	Name string
	Args []RefArg
}

// RefArg is one argument of a RefCall.
type RefArg struct {
	Name    string
	Allowed []any
}

func (r *RefCall) allowed(name string) ([]any, bool) {
	for _, a := range r.Args {
		if a.Name == name {
			return a.Allowed, true
		}
	}
	return nil, false
}

// ParseReference reads an actions instance's reference_answer: a list of
// {function_name: {argument: [allowed values...]}}.
func ParseReference(raw []byte) ([]RefCall, error) {
	v, err := decodeOrderedJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("reading reference_answer: %w", err)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("reading reference_answer: not a list")
	}
	var out []RefCall
	for i, e := range list {
		d, ok := e.(*Dict)
		if !ok || len(d.Keys) != 1 {
			return nil, fmt.Errorf("reading reference_answer: entry %d is not {function: {arguments}}", i)
		}
		name, _ := d.Keys[0].(string)
		args, ok := d.Vals[0].(*Dict)
		if name == "" || !ok {
			return nil, fmt.Errorf("reading reference_answer: entry %d is not {function: {arguments}}", i)
		}
		rc := RefCall{Name: name}
		for j, k := range args.Keys {
			an, _ := k.(string)
			allowed, ok := args.Vals[j].([]any)
			if !ok {
				allowed = []any{args.Vals[j]}
			}
			rc.Args = append(rc.Args, RefArg{Name: an, Allowed: allowed})
		}
		out = append(out, rc)
	}
	return out, nil
}

// RenderReference writes the reference as calls, each argument with its
// first allowed value and optional arguments with no other value left
// out: one correct answer, in the syntax the task prompt asks for.
func RenderReference(refs []RefCall) string {
	calls := make([]*Call, len(refs))
	for i, r := range refs {
		c := &Call{Name: r.Name}
		for _, a := range r.Args {
			for _, v := range a.Allowed {
				if s, ok := v.(string); ok && s == "" {
					continue
				}
				c.Args = append(c.Args, Arg{Name: a.Name, Value: v})
				break
			}
		}
		calls[i] = c
	}
	return RenderCalls(calls)
}

// parseFunctions reads the instance's function list (or single function).
func parseFunctions(raw []byte) (map[string]*funcDoc, error) {
	v, err := decodeOrderedJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("reading function: %w", err)
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	out := map[string]*funcDoc{}
	for i, e := range list {
		d, ok := e.(*Dict)
		if !ok {
			return nil, fmt.Errorf("reading function: entry %d is not an object", i)
		}
		name, _ := getString(d, "name")
		if name == "" {
			return nil, fmt.Errorf("reading function: entry %d has no name", i)
		}
		fd := &funcDoc{name: name, params: map[string]paramDoc{}}
		if p, ok := d.Get("parameters"); ok {
			if pd, ok := p.(*Dict); ok {
				if props, ok := pd.Get("properties"); ok {
					if pp, ok := props.(*Dict); ok {
						for j, k := range pp.Keys {
							pn, _ := k.(string)
							var doc paramDoc
							if sd, ok := pp.Vals[j].(*Dict); ok {
								doc.typ, _ = getString(sd, "type")
								if it, ok := sd.Get("items"); ok {
									if itd, ok := it.(*Dict); ok {
										doc.items, _ = getString(itd, "type")
									}
								}
							}
							fd.params[pn] = doc
						}
					}
				}
				if req, ok := pd.Get("required"); ok {
					if rl, ok := req.([]any); ok {
						for _, r := range rl {
							if s, ok := r.(string); ok {
								fd.required = append(fd.required, s)
							}
						}
					}
				}
			}
		}
		out[name] = fd
	}
	return out, nil
}

func getString(d *Dict, k string) (string, bool) {
	v, ok := d.Get(k)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// GradeActions grades an actions reply with BFCL's AST checker: the
// predicted calls must pair one to one with the reference calls, in any
// order, each pair agreeing on the function name and on every argument by
// BFCL's rules (types from the documentation, strings compared without
// case, spaces or punctuation, int accepted for float, optional arguments
// marked by "" in the allowed values).
//
// BFCL pairs calls greedily; this grader finds a complete pairing when one
// exists, so it never fails an answer BFCL passes and differs only where
// BFCL's greedy order would miss a valid pairing.
func GradeActions(in *Instance, answer string) (Result, error) {
	if len(in.ReferenceAnswer) == 0 || len(in.Function) == 0 {
		return Result{}, badInstance(in, "the actions instance lacks reference_answer or function")
	}
	refs, err := ParseReference(in.ReferenceAnswer)
	if err != nil {
		return Result{}, badInstance(in, "%v", err)
	}
	docs, err := parseFunctions(in.Function)
	if err != nil {
		return Result{}, badInstance(in, "%v", err)
	}
	for _, r := range refs {
		if docs[r.Name] == nil {
			return Result{}, badInstance(in, "reference_answer calls %s, which the function list does not document", r.Name)
		}
	}
	r := Result{Task: TaskActions, Expected: RenderReference(refs),
		Check: fmt.Sprintf("BFCL AST checker, %s, order-insensitive", plural(len(refs), "expected call"))}
	calls, how, err := ExtractCalls(answer)
	if err != nil {
		r.Status, r.Reason = Fail, "no function calls could be read from the answer: "+err.Error()
		return r, nil
	}
	r.Artifact, r.Extraction = RenderCalls(calls), how
	if len(calls) != len(refs) {
		r.Status = Fail
		r.Reason = fmt.Sprintf("%s instead of %s", plural(len(calls), "call"), plural(len(refs), "call"))
		return r, nil
	}
	why := make([][]string, len(refs))
	ok := make([][]bool, len(refs))
	for i, ref := range refs {
		why[i] = make([]string, len(calls))
		ok[i] = make([]bool, len(calls))
		for j, c := range calls {
			why[i][j] = checkCall(docs[ref.Name], c, &refs[i])
			ok[i][j] = why[i][j] == ""
		}
	}
	match := bipartite(ok)
	for i, j := range match {
		if j >= 0 {
			continue
		}
		r.Status = Fail
		r.Reason = unmatchedReason(refs[i], calls, why[i], i)
		return r, nil
	}
	r.Status, r.Reason = Pass, "every expected call is matched by a predicted call"
	return r, nil
}

func unmatchedReason(ref RefCall, calls []*Call, why []string, i int) string {
	for j, c := range calls {
		if sameFuncName(c.Name, ref.Name) && why[j] != "" {
			return fmt.Sprintf("expected call %d (%s) has no match; against predicted call %d: %s", i+1, ref.Name, j+1, why[j])
		}
	}
	for j, c := range calls {
		if sameFuncName(c.Name, ref.Name) {
			return fmt.Sprintf("expected call %d (%s) has no match: predicted call %d fits it but is needed for another expected call", i+1, ref.Name, j+1)
		}
	}
	return fmt.Sprintf("expected call %d (%s) has no match: no predicted call has that name", i+1, ref.Name)
}

// bipartite pairs rows with columns where ok[i][j], maximising pairs
// (augmenting paths). It returns each row's column, or -1.
func bipartite(ok [][]bool) []int {
	n := len(ok)
	m := 0
	if n > 0 {
		m = len(ok[0])
	}
	colOf := make([]int, n)
	rowOf := make([]int, m)
	for i := range rowOf {
		rowOf[i] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j := 0; j < m; j++ {
			if !ok[i][j] || seen[j] {
				continue
			}
			seen[j] = true
			if rowOf[j] < 0 || try(rowOf[j], seen) {
				rowOf[j] = i
				return true
			}
		}
		return false
	}
	for i := 0; i < n; i++ {
		try(i, make([]bool, m))
	}
	for i := range colOf {
		colOf[i] = -1
	}
	for j, i := range rowOf {
		if i >= 0 {
			colOf[i] = j
		}
	}
	return colOf
}

// sameFuncName accepts the documented name, or that name with its dots
// replaced by underscores: function-calling APIs do not allow dots in
// names, and BFCL converts them the same way for such models.
func sameFuncName(got, want string) bool {
	return got == want || got == strings.ReplaceAll(want, ".", "_")
}

// pyType is the name of Python's type for a parsed value.
func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case Tuple:
		return "tuple"
	case *Dict:
		return "dict"
	}
	return "object"
}

// pyTypeOf maps a BFCL documentation type to a Python type name; "" when
// the type is unknown, in which case no type check is made.
func pyTypeOf(t string) string {
	switch t {
	case "string", "any":
		return "str"
	case "integer":
		return "int"
	case "float", "number":
		return "float"
	case "boolean":
		return "bool"
	case "array", "tuple", "list":
		return "list"
	case "dict", "object":
		return "dict"
	}
	return ""
}

// checkCall checks one predicted call against one expected call, as
// BFCL's simple_function_checker does. It returns "" when they match, or
// why not.
func checkCall(doc *funcDoc, c *Call, ref *RefCall) string {
	if !sameFuncName(c.Name, ref.Name) {
		return fmt.Sprintf("calls %s, not %s", c.Name, ref.Name)
	}
	if len(c.Positional) > 0 {
		return "has positional arguments; only keyword arguments are matched (as in BFCL)"
	}
	has := map[string]bool{}
	for _, a := range c.Args {
		has[a.Name] = true
	}
	for _, p := range doc.required {
		if !has[p] {
			return fmt.Sprintf("lacks the required argument %s", p)
		}
	}
	for _, a := range c.Args {
		allowed, inRef := ref.allowed(a.Name)
		pd, inDoc := doc.params[a.Name]
		if !inRef || !inDoc {
			return fmt.Sprintf("has an unexpected argument %s", a.Name)
		}
		expected := pyTypeOf(pd.typ)
		nested := ""
		if pd.typ == "array" || pd.typ == "tuple" {
			nested = pyTypeOf(pd.items)
		}
		v := a.Value
		if t, ok := v.(Tuple); ok && pd.typ == "tuple" {
			v = []any(t)
		}
		if i, ok := v.(int64); ok && expected == "float" {
			v = float64(i)
		}
		isVar := false
		if expected != "" {
			var ok bool
			isVar, ok = typeCheck(v, allowed, expected, nested)
			if !ok {
				return fmt.Sprintf("argument %s=%s has type %s, not %s", a.Name, Repr(a.Value), pyType(a.Value), pd.typ)
			}
		}
		bad := fmt.Sprintf("argument %s=%s is not one of %s", a.Name, Repr(a.Value), Repr(allowed))
		if !isVar {
			switch {
			case expected == "dict":
				if !dictCheck(v, allowed) {
					return bad
				}
				continue
			case expected == "list" && nested == "dict":
				if !listDictCheck(v, allowed) {
					return bad
				}
				continue
			case expected == "str":
				if !stringCheck(v, allowed) {
					return bad + " (compared without case, spaces or punctuation)"
				}
				continue
			case expected == "list":
				if !listCheck(v, allowed) {
					return bad
				}
				continue
			}
		}
		if !pyIn(v, allowed) {
			return bad
		}
	}
	for _, ra := range ref.Args {
		if !has[ra.Name] && !pyIn("", ra.Allowed) {
			return fmt.Sprintf("leaves out %s, which is not optional", ra.Name)
		}
	}
	return ""
}

// typeCheck is BFCL's type_checker: the value must have the documented
// type, or the type of the first non-optional allowed value (the reference
// wrote a variable's name where the documentation wants another type), in
// which case isVar is set. Arrays are checked one level deep.
func typeCheck(v any, allowed []any, expected, nested string) (isVar, ok bool) {
	paType := ""
	for _, a := range allowed {
		if s, ok := a.(string); ok && s == "" {
			continue
		}
		paType = pyType(a)
		break
	}
	isVar = paType != "" && paType != expected
	if pyType(v) == expected {
		if nested == "" {
			return isVar, true
		}
		items, _ := v.([]any)
		for _, pa := range allowed {
			flag := true
			if pl, ok := pa.([]any); ok {
				for _, it := range items {
					if _, ok := typeCheck(it, pl, nested, ""); !ok {
						flag = false
						break
					}
				}
			}
			if flag {
				return isVar, true
			}
		}
		return false, false
	}
	if paType != "" && pyType(v) == paType {
		return true, true
	}
	return false, false
}

var standardizeRE = regexp.MustCompile(`[ ,./\-_*^]`)

// standardize is BFCL's string normalisation: no spaces or ,./-_*^, lower
// case, single quotes as double quotes.
func standardize(s string) string {
	return strings.ReplaceAll(strings.ToLower(standardizeRE.ReplaceAllString(s, "")), "'", `"`)
}

func stringCheck(v any, allowed []any) bool {
	s, _ := v.(string)
	want := standardize(s)
	for _, a := range allowed {
		if as, ok := a.(string); ok && standardize(as) == want {
			return true
		}
	}
	return false
}

func standardizeList(l []any) []any {
	out := make([]any, len(l))
	for i, e := range l {
		if s, ok := e.(string); ok {
			out[i] = standardize(s)
		} else {
			out[i] = e
		}
	}
	return out
}

func listCheck(v any, allowed []any) bool {
	l, _ := v.([]any)
	got := standardizeList(l)
	for _, a := range allowed {
		if al, ok := a.([]any); ok && pyEqual(got, standardizeList(al)) {
			return true
		}
	}
	return false
}

func dictCheck(v any, allowed []any) bool {
	d, ok := v.(*Dict)
	if !ok {
		return false
	}
	for _, a := range allowed {
		ad, ok := a.(*Dict)
		if !ok {
			continue
		}
		if dictMatches(d, ad) {
			return true
		}
	}
	return false
}

func dictMatches(d, want *Dict) bool {
	for i, k := range d.Keys {
		ks, _ := k.(string)
		wv, ok := want.Get(ks)
		if _, isStr := k.(string); !isStr || !ok {
			return false
		}
		vals, ok := wv.([]any)
		if !ok {
			vals = []any{wv}
		}
		got := d.Vals[i]
		if s, ok := got.(string); ok {
			got = standardize(s)
		}
		if !pyIn(got, standardizeList(vals)) {
			return false
		}
	}
	for i, k := range want.Keys {
		ks, _ := k.(string)
		if _, ok := d.Get(ks); ok {
			continue
		}
		vals, ok := want.Vals[i].([]any)
		if !ok || !pyIn("", vals) {
			return false
		}
	}
	return true
}

func listDictCheck(v any, allowed []any) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, a := range allowed {
		al, ok := a.([]any)
		if !ok || len(al) != len(l) {
			continue
		}
		all := true
		for i := range l {
			d, ok1 := l[i].(*Dict)
			w, ok2 := al[i].(*Dict)
			if !ok1 || !ok2 || !dictMatches(d, w) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func pyIn(v any, list []any) bool {
	for _, e := range list {
		if pyEqual(v, e) {
			return true
		}
	}
	return false
}

// pyEqual is Python's == on parsed values: numbers (bool included)
// compare by value across int and float, a list never equals a tuple.
func pyEqual(a, b any) bool {
	if isNumber(a) && isNumber(b) {
		ia, aInt := toInt(a)
		ib, bInt := toInt(b)
		if aInt && bInt {
			return ia == ib
		}
		return toFloat(a) == toFloat(b)
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && seqEqual(x, y)
	case Tuple:
		y, ok := b.(Tuple)
		return ok && seqEqual(x, y)
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || len(x.Keys) != len(y.Keys) {
			return false
		}
		for i, k := range x.Keys {
			found := false
			for j, k2 := range y.Keys {
				if pyEqual(k, k2) {
					found = pyEqual(x.Vals[i], y.Vals[j])
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return false
}

func seqEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !pyEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}
