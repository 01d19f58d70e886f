package grade_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ac3/ac3/stages/lic/grade"
)

func gradeActions(t *testing.T, in *grade.Instance, answer string) grade.Result {
	t.Helper()
	res, err := grade.New(grade.Options{}).Grade(context.Background(), in, answer)
	if err != nil {
		t.Fatalf("%s: %v", in.TaskID, err)
	}
	return res
}

// jsonCalls writes the reference as a JSON list of {"name", "arguments"}.
func jsonCalls(t *testing.T, refs []grade.RefCall, openAI bool) string {
	t.Helper()
	var out []any
	for _, r := range refs {
		args := map[string]any{}
		for _, a := range r.Args {
			if s, ok := a.Allowed[0].(string); ok && s == "" {
				continue
			}
			args[a.Name] = jsonable(a.Allowed[0])
		}
		if openAI {
			b, _ := json.Marshal(args)
			out = append(out, map[string]any{"type": "function", "function": map[string]any{"name": r.Name, "arguments": string(b)}})
		} else {
			out = append(out, map[string]any{"name": r.Name, "arguments": args})
		}
	}
	var b []byte
	if openAI {
		b, _ = json.Marshal(map[string]any{"tool_calls": out})
	} else {
		b, _ = json.Marshal(out)
	}
	return string(b)
}

func jsonable(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	case float64:
		return json.Number(grade.Repr(x))
	}
	return v
}

func TestActionsOnSampleReferences(t *testing.T) {
	for _, in := range sample(t, grade.TaskActions) {
		refs, err := grade.ParseReference(in.ReferenceAnswer)
		if err != nil {
			t.Fatal(err)
		}
		rendered := grade.RenderReference(refs)
		calls, err := grade.ParsePythonCalls(rendered)
		if err != nil {
			t.Fatal(err)
		}
		reversed := make([]*grade.Call, len(calls))
		for i, c := range calls {
			reversed[len(calls)-1-i] = c
		}
		lines := make([]string, len(calls))
		for i, c := range calls {
			lines[i] = "- " + strings.Trim(grade.RenderCalls([]*grade.Call{c}), "[]")
		}
		right := map[string]string{
			"rendered":           rendered,
			"reversed":           grade.RenderCalls(reversed),
			"in a python block":  "Sure, here are the calls:\n\n```python\n" + rendered + "\n```\n",
			"in a list in prose": "I will call " + rendered + " for you.",
			"one per line":       "Calls needed:\n" + strings.Join(lines, "\n") + "\nThat is all.",
			"JSON list":          jsonCalls(t, refs, false),
			"OpenAI tool calls":  jsonCalls(t, refs, true),
		}
		for name, a := range right {
			if res := gradeActions(t, in, a); res.Status != grade.Pass {
				t.Errorf("%s, %s: %s (%s)\n%s", in.TaskID, name, res.Status, res.Reason, a)
			}
		}
		wrong := map[string]string{
			"one call missing": grade.RenderCalls(calls[1:]),
			"one call twice":   grade.RenderCalls(append(calls[:1:1], calls[:len(calls)-1]...)),
			"extra call":       grade.RenderCalls(append(calls, calls[0])),
			"no calls":         "I need more details first.",
			"empty list":       "[]",
		}
		for name, a := range wrong {
			if res := gradeActions(t, in, a); res.Status != grade.Fail {
				t.Errorf("%s, %s: %s (%s)\n%s", in.TaskID, name, res.Status, res.Reason, a)
			}
		}
	}
}

func TestActionsValues(t *testing.T) {
	tests := []struct {
		id, answer string
		want       grade.Status
	}{
		// strings: BFCL ignores case, spaces and ,./-_*^
		{"sharded-BFCL/parallel_198", `[lawsuit_search(entity="google", county="Santa-Clara", state="CA"), lawsuit_search(entity="Facebook", county="San Mateo")]`, grade.Pass},
		{"sharded-BFCL/parallel_198", `[lawsuit_search(entity="Google", county="Santa Clara"), lawsuit_search(entity="Facebook", county="San Mateo County")]`, grade.Fail},
		{"sharded-BFCL/parallel_198", `[lawsuit_search(entity="Google", county="Santa Clara", state="Texas"), lawsuit_search(entity="Facebook", county="San Mateo")]`, grade.Fail},
		// a required argument missing
		{"sharded-BFCL/parallel_198", `[lawsuit_search(entity="Google"), lawsuit_search(entity="Facebook", county="San Mateo")]`, grade.Fail},
		// an argument the function does not have
		{"sharded-BFCL/parallel_198", `[lawsuit_search(entity="Google", county="Santa Clara", year=2020), lawsuit_search(entity="Facebook", county="San Mateo")]`, grade.Fail},
		// float parameter: an int is accepted, arithmetic is evaluated, the
		// optional face_value may be left out
		{"sharded-BFCL/parallel_169", `[calculate_discounted_cash_flow(coupon_payment=50, period=5, discount_rate=5/100), calculate_discounted_cash_flow(coupon_payment=60, period=7, discount_rate=0.04, face_value=1000)]`, grade.Pass},
		{"sharded-BFCL/parallel_169", `[calculate_discounted_cash_flow(coupon_payment=50, period=5, discount_rate=5), calculate_discounted_cash_flow(coupon_payment=60, period=7, discount_rate=0.04)]`, grade.Fail},
		// integer parameter: a float is a type error
		{"sharded-BFCL/parallel_169", `[calculate_discounted_cash_flow(coupon_payment=50.0, period=5, discount_rate=0.05), calculate_discounted_cash_flow(coupon_payment=60, period=7, discount_rate=0.04)]`, grade.Fail},
		// a boolean is not an integer
		{"sharded-BFCL/parallel_69", `[calculate_triangle_area(base=10, height=5), calculate_triangle_area(base=8, height=True)]`, grade.Fail},
		// dotted names may come with underscores (function-calling APIs)
		{"sharded-BFCL/parallel_156", `[random_forest_train(n_estimators=100, max_depth=10, data="data_random_forest"), random_forest.train(n_estimators=200, max_depth=20, data="data_random_forest"), random_forest.train(n_estimators=300, max_depth=30, data="data_random_forest"), random_forest.train(n_estimators=400, max_depth=40, data="data_random_forest")]`, grade.Pass},
		{"sharded-BFCL/parallel_156", `[random_forest.train(n_estimators=100, max_depth=10, data="data_random_forest"), random_forest.train(n_estimators=200, max_depth=20, data="data_random_forest"), random_forest.train(n_estimators=300, max_depth=30, data="data_random_forest"), random_forest.train(n_estimators=400, max_depth=30, data="data_random_forest")]`, grade.Fail},
		// arrays: a tuple is not a list, element order counts
		{"sharded-BFCL/parallel_129", `[create_histogram(data=(12, 15, 11, 14, 18, 19, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26), bins=5), create_histogram(data=[32, 35, 31, 34, 38, 39, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46], bins=5)]`, grade.Fail},
		{"sharded-BFCL/parallel_129", `[create_histogram(data=[15, 12, 11, 14, 18, 19, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26], bins=5), create_histogram(data=[32, 35, 31, 34, 38, 39, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46], bins=5)]`, grade.Fail},
		// positional arguments are not matched
		{"sharded-BFCL/parallel_69", `[calculate_triangle_area(10, 5), calculate_triangle_area(8, 6)]`, grade.Fail},
		// multi-line list, comments, trailing comma
		{"sharded-BFCL/parallel_69", "[\n  calculate_triangle_area(base=10, height=5),  # first\n  calculate_triangle_area(\n    base=8,\n    height=6,\n  ),\n]", grade.Pass},
		// semicolons between calls
		{"sharded-BFCL/parallel_69", "calculate_triangle_area(base=10, height=5); calculate_triangle_area(base=8, height=6)", grade.Pass},
	}
	for _, tt := range tests {
		res := gradeActions(t, byID(t, grade.TaskActions, tt.id), tt.answer)
		if res.Status != tt.want {
			t.Errorf("%s: %s\n  graded %s (%s); want %s", tt.id, tt.answer, res.Status, res.Reason, tt.want)
		}
		if res.Status == grade.Fail && res.Reason == "" {
			t.Errorf("%s: a fail without a reason", tt.id)
		}
	}
}

// TestActionsPairing: BFCL pairs each expected call with the first
// predicted call that fits it; a complete pairing is found here even when
// that greedy choice would block it.
func TestActionsPairing(t *testing.T) {
	in := &grade.Instance{TaskID: "pairing", Task: grade.TaskActions, TestCategory: "parallel",
		Function:        json.RawMessage(`[{"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}, "required": []}}]`),
		ReferenceAnswer: json.RawMessage(`[{"f": {"x": [1, ""]}}, {"f": {"x": [1]}}]`)}
	// greedy: expected 1 (x=1 or absent) takes f(x=1), expected 2 (x=1) is left with f()
	if res := gradeActions(t, in, "[f(x=1), f()]"); res.Status != grade.Pass {
		t.Errorf("got %s (%s); want pass", res.Status, res.Reason)
	}
}

func TestActionsDictArguments(t *testing.T) {
	in := &grade.Instance{TaskID: "dict", Task: grade.TaskActions,
		Function:        json.RawMessage(`{"name": "book", "parameters": {"type": "dict", "properties": {"opts": {"type": "dict"}, "rooms": {"type": "array", "items": {"type": "dict"}}}, "required": ["opts"]}}`),
		ReferenceAnswer: json.RawMessage(`[{"book": {"opts": [{"city": ["Paris", "paris"], "nights": [2], "pet": ["", false]}], "rooms": [[{"beds": [2]}], ""]}}]`)}
	tests := []struct {
		answer string
		want   grade.Status
	}{
		{`book(opts={"city": "PARIS", "nights": 2})`, grade.Pass},
		{`book(opts={"city": "Paris", "nights": 2, "pet": False}, rooms=[{"beds": 2}])`, grade.Pass},
		{`book(opts={"city": "Paris"})`, grade.Fail},
		{`book(opts={"city": "Paris", "nights": 2, "view": "sea"})`, grade.Fail},
		{`book(opts={"city": "Paris", "nights": 2}, rooms=[{"beds": 3}])`, grade.Fail},
		{`[{"book": {"opts": {"city": "Paris", "nights": 2}}}]`, grade.Pass},
	}
	for _, tt := range tests {
		if res := gradeActions(t, in, tt.answer); res.Status != tt.want {
			t.Errorf("%s: %s (%s); want %s", tt.answer, res.Status, res.Reason, tt.want)
		}
	}
}

func TestActionsBadInstances(t *testing.T) {
	g := grade.New(grade.Options{})
	for _, in := range []*grade.Instance{
		{TaskID: "no-ref", Task: grade.TaskActions, Function: json.RawMessage(`[{"name": "f"}]`)},
		{TaskID: "bad-ref", Task: grade.TaskActions, Function: json.RawMessage(`[{"name": "f"}]`), ReferenceAnswer: json.RawMessage(`{"f": 1}`)},
		{TaskID: "undocumented", Task: grade.TaskActions, Function: json.RawMessage(`[{"name": "f"}]`), ReferenceAnswer: json.RawMessage(`[{"g": {}}]`)},
	} {
		if _, err := g.Grade(context.Background(), in, "f()"); !errors.Is(err, grade.ErrBadInstance) {
			t.Errorf("%s: err = %v; want ErrBadInstance", in.TaskID, err)
		}
	}
}

func TestParsePythonCalls(t *testing.T) {
	tests := []struct {
		in, want string // want: the calls rendered back, or "error"
	}{
		{`f(a=1)`, `[f(a=1)]`},
		{`[f(a=1, b=[2, 3]), g.h(s='x')]`, `[f(a=1, b=[2, 3]), g.h(s='x')]`},
		{`(f(a=1),)`, `[f(a=1)]`},
		{"f(a=1)\ng(b=2)", `[f(a=1), g(b=2)]`},
		{`f(a=-1.5e3, b=+2, c=0x10, d=1_000, e=.5, f=5.)`, `[f(a=-1500.0, b=2, c=16, d=1000, e=0.5, f=5.0)]`},
		{`f(a=2**10, b=7//2, c=7/2, d=-7%3, e=1+2*3, f=(1+2)*3)`, `[f(a=1024, b=3, c=3.5, d=2, e=7, f=9)]`},
		{`f(a="x" "y", b='it\'s', c=r"\d", d="\u00e9\n", e="""tri"ple""")`, `[f(a='xy', b="it's", c='\\d', d='é\n', e='tri"ple')]`},
		{`f(a=True, b=None, c=False)`, `[f(a=True, b=None, c=False)]`},
		{`f(a=(1,), b=(), c=(1, 2), d=(3))`, `[f(a=(1,), b=(), c=(1, 2), d=3)]`},
		{`f(a={'k': [1, {'n': None}]}, b={})`, `[f(a={'k': [1, {'n': None}]}, b={})]`},
		{`f(a=np.pi, b=x[0], c=datetime(2020, 1, 2), d=g(k=1))`, `[f(a='np.pi', b='x[0]', c='datetime(2020, 1, 2)', d={'g': {'k': 1}})]`},
		{`f(1, 'a', k=2)`, `[f(1, 'a', k=2)]`},
		{`f(a=...)`, `[f(a='...')]`},
		{`f(a=99999999999999999999)`, `[f(a=1e+20)]`},
		{`[]`, "error"},
		{`f(a=1`, "error"},
		{`f(a=lambda x: x)`, "error"},
		{`f(a=[x for x in y])`, "error"},
		{`f(a={1, 2})`, "error"},
		{`f(a=1, a=2)`, "error"},
		{`f(a=1, 2)`, "error"},
		{`f(*args)`, "error"},
		{`f(a=1) g(b=2)`, "error"},
		{`x = f(a=1)`, "error"},
		{`'just a string'`, "error"},
		{`f(a=1/0)`, "error"},
		{`f(a='unterminated)`, "error"},
	}
	for _, tt := range tests {
		calls, err := grade.ParsePythonCalls(tt.in)
		got := "error"
		if err == nil {
			got = grade.RenderCalls(calls)
		}
		if got != tt.want {
			t.Errorf("ParsePythonCalls(%s) = %s (err %v); want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestExtractCallsJSONForms(t *testing.T) {
	tests := []struct{ in, want string }{
		{`[{"name": "f", "arguments": {"a": 1, "b": 2.0}}]`, `[f(a=1, b=2.0)]`},
		{`{"name": "f", "parameters": {"a": "x"}}`, `[f(a='x')]`},
		{`{"tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": [1, 2]}"}}]}`, `[f(a=[1, 2])]`},
		{`[{"f": {"a": true}}, {"g": {}}]`, `[f(a=True), g()]`},
		{"```json\n[{\"name\": \"f\", \"arguments\": {}}]\n```", `[f()]`},
	}
	for _, tt := range tests {
		calls, _, err := grade.ExtractCalls(tt.in)
		if err != nil {
			t.Errorf("ExtractCalls(%s): %v", tt.in, err)
			continue
		}
		if got := grade.RenderCalls(calls); got != tt.want {
			t.Errorf("ExtractCalls(%s) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func FuzzParsePythonCalls(f *testing.F) {
	for _, s := range []string{"[f(a=1, b=[2, 3])]", "f(a='x\\n', b=(1,), c={'k': None})", "f(a=2**-1, b=-(3))", "g.h(x=1e400)", "f(a=\"\"\"x\"\"\")", "f(a=1)\n\ng(b=2);"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		calls, err := grade.ParsePythonCalls(s)
		if err != nil {
			return
		}
		// what parses renders to call syntax that parses to the same thing
		r := grade.RenderCalls(calls)
		if strings.Contains(r, "nan") {
			return // NaN has no literal to read back
		}
		again, err := grade.ParsePythonCalls(r)
		if err != nil {
			t.Fatalf("rendered %q from %q does not parse: %v", r, s, err)
		}
		if r2 := grade.RenderCalls(again); r2 != r {
			t.Fatalf("round trip changed %q into %q", r, r2)
		}
	})
}

func FuzzExtractCalls(f *testing.F) {
	for _, s := range []string{"I'll call [f(a=1)] now", "```python\nf(a=1)\n```", `{"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}`, "[[[", "- f(a=1)\n- g(b=[1,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		calls, how, err := grade.ExtractCalls(s)
		if err == nil && (len(calls) == 0 || how == "") {
			t.Fatalf("no error but %d calls found by %q", len(calls), how)
		}
		if err != nil && calls != nil {
			t.Fatal("calls returned with an error")
		}
		_ = fmt.Sprint(grade.RenderCalls(calls))
	})
}
