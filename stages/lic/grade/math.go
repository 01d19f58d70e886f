package grade

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AnswerPrefix is the line the math task prompt asks the assistant to end
// with, followed by the number alone: "Final answer: 42". The grader
// reads the number after the last such line; matching is case-insensitive
// and tolerates Markdown emphasis around the prefix.
const AnswerPrefix = "Final answer:"

// How a math answer was found, in the order they are tried.
const (
	ExtractedPrefix  = "answer prefix"
	ExtractedHashes  = "#### marker"
	ExtractedBoxed   = "\\boxed{}"
	ExtractedLastNum = "last number"
)

// Number is a number read from text: as written, and its value.
type Number struct {
	Text  string
	Value float64
}

var (
	// "Final answer:", "**Final Answer:**", "final answer is", "Final answer =".
	prefixRE = regexp.MustCompile(`(?i)\bfinal\s+answer\b[\s*_]*(?:[:：=]|\bis\b)`)
	fracRE   = regexp.MustCompile(`\\[dt]?frac\s*\{\s*([-+]?[0-9.,]+)\s*\}\s*\{\s*([-+]?[0-9.,]+)\s*\}`)
	textRE   = regexp.MustCompile(`\\(?:text|mathrm|textbf|mathbf)\s*\{([^{}]*)\}`)
	texClean = strings.NewReplacer(`\$`, "$", `\%`, "%", `{,}`, ",", `\,`, "", `\!`, "", `\ `, " ", "−", "-", "–", "-", "\u00a0", " ")
)

// ExtractNumber finds the final numeric answer in a math reply: the first
// number after the last AnswerPrefix line (or the line after it, when the
// prefix stands alone), else after a GSM8K-style "####", else inside the
// last \boxed{}, else the last number in the reply. how names the rule that
// matched; ok is false when the reply holds no number at all.
func ExtractNumber(answer string) (n Number, how string, ok bool) {
	text := normalizeMath(answer)
	if n, ok := afterLastPrefix(text); ok {
		return n, ExtractedPrefix, true
	}
	if i := strings.LastIndex(text, "####"); i >= 0 {
		if n, ok := numberAfter(text[i+4:]); ok {
			return n, ExtractedHashes, true
		}
	}
	if body, ok := lastBoxed(text); ok {
		if n, ok := firstNumber(body); ok {
			return n, ExtractedBoxed, true
		}
	}
	if nums := scanNumbers(text); len(nums) > 0 {
		return nums[len(nums)-1], ExtractedLastNum, true
	}
	return Number{}, "", false
}

// ParseNumber reads the first number in s: "1,234", "$12.50", "-3",
// "45%", "3/4", "12 apples", "\frac{1}{2}".
func ParseNumber(s string) (Number, bool) {
	nums := scanNumbers(normalizeMath(s))
	if len(nums) == 0 {
		return Number{}, false
	}
	return nums[0], true
}

// GSM8KAnswer reads the reference number of a GSM8K solution: the text
// after its last "####".
func GSM8KAnswer(solution string) (Number, bool) {
	i := strings.LastIndex(solution, "####")
	if i < 0 {
		return Number{}, false
	}
	return ParseNumber(solution[i+4:])
}

// SameNumber reports whether a and b are equal within 1e-6, or one part in
// a billion for large numbers: enough for float arithmetic and printed
// decimals, far too little for any real GSM8K difference.
func SameNumber(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= math.Max(1e-6, 1e-9*math.Abs(b))
}

// GradeMath grades a math reply against the instance's GSM8K answer.
func GradeMath(in *Instance, answer string) (Result, error) {
	ref, ok := GSM8KAnswer(in.Answer)
	if !ok {
		return Result{}, badInstance(in, "the math reference answer has no number after ####")
	}
	r := Result{Task: TaskMath, Expected: ref.Text}
	got, how, ok := ExtractNumber(answer)
	if !ok {
		r.Status, r.Reason = Fail, "no number found in the answer"
		return r, nil
	}
	r.Artifact, r.Extraction = got.Text, how
	r.Check = "numeric comparison within 1e-6 (or 1e-9 relative)"
	if SameNumber(got.Value, ref.Value) {
		r.Status = Pass
		r.Reason = formatValue(got.Value) + " equals the reference " + formatValue(ref.Value)
	} else {
		r.Status = Fail
		r.Reason = formatValue(got.Value) + " differs from the reference " + formatValue(ref.Value)
	}
	return r, nil
}

func formatValue(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// normalizeMath rewrites LaTeX number notation into plain text.
func normalizeMath(s string) string {
	s = fracRE.ReplaceAllString(s, "$1/$2")
	s = textRE.ReplaceAllString(s, " $1")
	return texClean.Replace(s)
}

// afterLastPrefix returns the number after the last AnswerPrefix that has
// one. Each stretch of text is scanned once: a prefix followed by another
// prefix on the same line can only take a number from the gap between the
// two (the later prefix's words would otherwise make numberAfter refuse
// the line), so a reply repeating the prefix thousands of times on one line
// costs linear time, not quadratic.
func afterLastPrefix(text string) (Number, bool) {
	locs := prefixRE.FindAllStringIndex(text, -1)
	for i := len(locs) - 1; i >= 0; i-- {
		rest := text[locs[i][1]:]
		if i+1 < len(locs) {
			gap := text[locs[i][1]:locs[i+1][0]]
			if !strings.Contains(gap, "\n") {
				// A number cannot run into the next prefix's letters.
				if n, ok := firstNumber(gap); ok {
					return n, true
				}
				continue
			}
		}
		if n, ok := numberAfter(rest); ok {
			return n, true
		}
	}
	return Number{}, false
}

// numberAfter returns the first number on the rest of the line s starts
// in; when that rest holds no words (the prefix stood alone on its line),
// the first number on the next non-empty line.
func numberAfter(s string) (Number, bool) {
	line, rest, _ := strings.Cut(s, "\n")
	if n, ok := firstNumber(line); ok {
		return n, true
	}
	if strings.Trim(line, " \t\r*_:`$") != "" {
		return Number{}, false
	}
	for rest != "" {
		line, rest, _ = strings.Cut(rest, "\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if n, ok := firstNumber(line); ok {
			return n, true
		}
		break
	}
	return Number{}, false
}

// lastBoxed returns the content of the last \boxed{...}, braces balanced.
func lastBoxed(s string) (string, bool) {
	i := strings.LastIndex(s, `\boxed`)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(`\boxed`):]
	j := strings.IndexByte(rest, '{')
	if j < 0 || strings.TrimSpace(rest[:j]) != "" {
		return "", false
	}
	depth := 0
	for k := j; k < len(rest); k++ {
		switch rest[k] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return rest[j+1 : k], true
			}
		}
	}
	return rest[j+1:], true
}

// firstNumber is scanNumbers(s)[0] without reading past it.
func firstNumber(s string) (Number, bool) {
	for i := 0; i < len(s); {
		n, end, ok := numberAt(s, i)
		if ok {
			return n, true
		}
		i = nextStart(s, i, end)
	}
	return Number{}, false
}

// scanNumbers finds the numbers in s, left to right.
//
// A number is an optional sign and currency symbol, digits (with commas
// only as thousands separators: "1,234" but not "1,23"), an optional
// decimal part and exponent, then optionally "/ digits" (a fraction) and
// "%". Trailing words are not part of it. A sign counts only when it does
// not follow a letter or digit, so "5-year-old" and "2022-2023" do not
// make negative numbers; digits glued to a preceding letter ("x2", "H2O")
// are not numbers.
func scanNumbers(s string) []Number {
	var out []Number
	for i := 0; i < len(s); {
		n, end, ok := numberAt(s, i)
		if !ok {
			i = nextStart(s, i, end)
			continue
		}
		out = append(out, n)
		i = end
	}
	return out
}

// nextStart is where scanning goes on after numberAt failed at i: past
// what it consumed, else the next rune.
func nextStart(s string, i, end int) int {
	if end > i {
		return end
	}
	_, w := utf8.DecodeRuneInString(s[i:])
	return i + w
}

func isCurrency(r rune) bool {
	switch r {
	case '$', '€', '£', '¥', '₹':
		return true
	}
	return false
}

func prevRune(s string, i int) rune {
	if i == 0 {
		return ' '
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return r
}

// numberAt reads a number starting exactly at i.
func numberAt(s string, i int) (Number, int, bool) {
	start := i
	prev := prevRune(s, i)
	if unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == '_' || prev == '.' {
		return Number{}, 0, false
	}
	neg := false
	// sign and currency, in either order: "-$5", "$-5", "+5".
	for k := 0; k < 2 && i < len(s); k++ {
		r, w := utf8.DecodeRuneInString(s[i:])
		if (r == '-' || r == '+') && !neg && i+w < len(s) {
			if r == '-' {
				neg = true
			}
			i += w
			continue
		}
		if isCurrency(r) {
			i += w
			for i < len(s) && s[i] == ' ' {
				i++
			}
			continue
		}
		break
	}
	if i > start && i < len(s) && (s[i] == '-' || s[i] == '+') {
		if s[i] == '-' {
			neg = !neg
		}
		i++
	}
	intStart := i
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	intPart := s[intStart:i]
	// thousands groups: only if the first group has 1-3 digits and every
	// group after a comma has exactly three.
	if digits >= 1 && digits <= 3 {
		grouped := i
		for i+4 <= len(s) && s[i] == ',' && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) && (i+4 == len(s) || !isDigit(s[i+4])) {
			i += 4
		}
		if i > grouped {
			// One copy, not one per group: a run of thousands of groups
			// must not cost quadratic time.
			intPart = strings.ReplaceAll(s[intStart:i], ",", "")
		}
	}
	frac := ""
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		frac = s[i+1 : j]
		i = j
	}
	if intPart == "" && frac == "" {
		return Number{}, 0, false
	}
	if intPart == "" {
		intPart = "0"
	}
	exp := ""
	if i+1 < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		k := j
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k > j && (k == len(s) || !unicode.IsLetter(rune(s[k]))) {
			exp = s[i+1 : k]
			i = k
		}
	}
	lit := intPart
	if frac != "" {
		lit += "." + frac
	}
	if exp != "" {
		lit += "e" + exp
	}
	v, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		// Out of range: not a number, but the scan resumes after it, or
		// every thousands group of a huge "1,234,234,…" would be re-read.
		return Number{}, i, false
	}
	// a fraction: "3/4", "3 / 4".
	if j := skipSpaces(s, i); j < len(s) && s[j] == '/' && frac == "" && exp == "" {
		k := skipSpaces(s, j+1)
		m := k
		for m < len(s) && isDigit(s[m]) {
			m++
		}
		if m > k && (m == len(s) || s[m] != '.' && s[m] != '/') {
			d, err := strconv.ParseFloat(s[k:m], 64)
			if err == nil && d != 0 {
				v /= d
				i = m
			}
		}
	}
	if i < len(s) && s[i] == '%' {
		i++
	}
	if neg {
		v = -v
	}
	return Number{Text: strings.TrimSpace(s[start:i]), Value: v}, i, true
}

func skipSpaces(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
