package view

import (
	"fmt"
	"html/template"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ac3/ac3/pipeline/conv"
	"github.com/ac3/ac3/stages/compint"
)

// funcs are the helpers the templates call. None has state.
func funcs() template.FuncMap {
	return template.FuncMap{
		"base": filepath.Base,
		"join": strings.Join,
		"add":  func(a, b int) int { return a + b },
		"list": func(xs ...string) []string { return xs },
		"cut":  cut,
		"conv": func(id string, turn int) string { return convLink(id, turn) },
		"ints": func(xs []int) string {
			s := make([]string, len(xs))
			for i, x := range xs {
				s[i] = fmt.Sprint(x)
			}
			return strings.Join(s, ", ")
		},
		// side names the strategy a stored outcome ("A", "B", "tie") favours.
		"side": func(outcome, a, b string) string {
			switch outcome {
			case "A":
				return a
			case "B":
				return b
			}
			return outcome
		},
		// back is the turn a reference ("2a": two turns back, its assistant
		// reply) made at turn t points at; 0 when it is not one.
		"back": func(t int, ref string) int {
			n, err := strconv.Atoi(strings.TrimRight(ref, "au"))
			if err != nil || n <= 0 || n >= t {
				return 0
			}
			return t - n
		},
		// order is the i-th order a compliance question was asked in, "" when
		// the unit recorded fewer orders than answers.
		"order": func(os []compint.Order, i int) string {
			if i < len(os) {
				return string(os[i])
			}
			return ""
		},
		"pct100": func(f float64) float64 { return 100 * f },
		// final is the last assistant message of a trajectory.
		"final": func(ms []conv.Message) string {
			for i := len(ms) - 1; i >= 0; i-- {
				if ms[i].Role == conv.Assistant {
					return ms[i].Content
				}
			}
			return ""
		},
		"deref": func(f *float64) string {
			if f == nil {
				return ""
			}
			return fmt.Sprintf("%.2f", *f)
		},
	}
}
