package grade

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// sqlKind is the kind of a SQL token.
type sqlKind uint8

const (
	tkSpace   sqlKind = iota // white space
	tkComment                // -- to end of line, or /* ... */
	tkString                 // '...' (always a string literal in SQLite)
	tkQuoted                 // "..." (an identifier, or a string if no column has the name)
	tkIdent                  // `...` or [...] (always an identifier)
	tkNumber                 // 12, 1.5, .5, 1e3, 0x1F
	tkWord                   // keyword or bare identifier
	tkParam                  // ?, ?1, :name, @name, $name
	tkOp                     // operators and punctuation
)

type sqlToken struct {
	kind sqlKind
	text string
}

// tokenizeSQL splits s into tokens whose texts concatenate back to s
// exactly. It follows SQLite's lexical rules closely enough to tell
// literals, identifiers and keywords apart; an unterminated string or
// comment runs to the end of s.
func tokenizeSQL(s string) []sqlToken {
	var out []sqlToken
	for i := 0; i < len(s); {
		j, kind := scanSQLToken(s, i)
		out = append(out, sqlToken{kind: kind, text: s[i:j]})
		i = j
	}
	return out
}

func scanSQLToken(s string, i int) (int, sqlKind) {
	c := s[i]
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		j := i + 1
		for j < len(s) && strings.IndexByte(" \t\n\r\f\v", s[j]) >= 0 {
			j++
		}
		return j, tkSpace
	case c == '-' && i+1 < len(s) && s[i+1] == '-':
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return len(s), tkComment
		}
		return i + j, tkComment
	case c == '/' && i+1 < len(s) && s[i+1] == '*':
		j := strings.Index(s[i+2:], "*/")
		if j < 0 {
			return len(s), tkComment
		}
		return i + 2 + j + 2, tkComment
	case c == '\'':
		return scanQuoted(s, i, '\''), tkString
	case c == '"':
		return scanQuoted(s, i, '"'), tkQuoted
	case c == '`':
		return scanQuoted(s, i, '`'), tkIdent
	case c == '[':
		j := strings.IndexByte(s[i:], ']')
		if j < 0 {
			return len(s), tkIdent
		}
		return i + j + 1, tkIdent
	case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
		return scanSQLNumber(s, i), tkNumber
	case c == '?':
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		return j, tkParam
	case (c == ':' || c == '@' || c == '$') && i+1 < len(s) && isWordByte(s, i+1):
		j := i + 1
		for j < len(s) && isWordByte(s, j) {
			_, w := utf8.DecodeRuneInString(s[j:])
			j += w
		}
		return j, tkParam
	case isWordStart(s, i):
		j := i
		for j < len(s) && isWordByte(s, j) {
			_, w := utf8.DecodeRuneInString(s[j:])
			j += w
		}
		return j, tkWord
	}
	for _, op := range []string{"->>", "<=", ">=", "<>", "!=", "==", "||", "<<", ">>", "->"} {
		if strings.HasPrefix(s[i:], op) {
			return i + len(op), tkOp
		}
	}
	_, w := utf8.DecodeRuneInString(s[i:])
	return i + w, tkOp
}

// scanQuoted returns the end of a quoted token; a doubled quote is an
// escaped one.
func scanQuoted(s string, i int, q byte) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

func scanSQLNumber(s string, i int) int {
	j := i
	if s[j] == '0' && j+1 < len(s) && (s[j+1] == 'x' || s[j+1] == 'X') {
		j += 2
		for j < len(s) && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
			j++
		}
		return j
	}
	for j < len(s) && (isDigit(s[j]) || s[j] == '_') {
		j++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	j, _ = scanExponent(s, j)
	return j
}

// scanExponent returns where the exponent at s[j] (e or E, a sign or none,
// digits) ends and true, or j and false when none starts there. SQL and
// Python write exponents alike, so both lexers read them here.
func scanExponent(s string, j int) (int, bool) {
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			return k, true
		}
	}
	return j, false
}

func isWordStart(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || unicode.IsLetter(r) || r >= utf8.RuneSelf && r != utf8.RuneError && !unicode.IsSpace(r) && !unicode.IsPunct(r) && !unicode.IsSymbol(r)
}

func isWordByte(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) || r >= utf8.RuneSelf && r != utf8.RuneError && !unicode.IsSpace(r) && !unicode.IsPunct(r) && !unicode.IsSymbol(r)
}

// significant drops spaces and comments.
func significant(toks []sqlToken) []sqlToken {
	out := make([]sqlToken, 0, len(toks))
	for _, t := range toks {
		if t.kind != tkSpace && t.kind != tkComment {
			out = append(out, t)
		}
	}
	return out
}

func joinTokens(toks []sqlToken) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.text)
	}
	return b.String()
}

func isKeyword(t sqlToken, kw string) bool {
	return t.kind == tkWord && strings.EqualFold(t.text, kw)
}

// statements splits a script on semicolons outside literals and returns
// the statements that hold anything but spaces and comments.
func statements(s string) [][]sqlToken {
	var (
		out [][]sqlToken
		cur []sqlToken
	)
	flush := func() {
		if len(significant(cur)) > 0 {
			out = append(out, cur)
		}
		cur = nil
	}
	for _, t := range tokenizeSQL(s) {
		if t.kind == tkOp && t.text == ";" {
			flush()
			continue
		}
		cur = append(cur, t)
	}
	flush()
	return out
}

// prepareQuery checks that s is exactly one read-only query and returns it
// normalised the way LiC does before running it: surrounding space and
// semicolons trimmed, "> =" style split operators joined, DISTINCT removed
// unless keepDistinct. The reason says why s was refused.
func prepareQuery(s string, keepDistinct bool) (query string, reason string) {
	stmts := statements(s)
	switch len(stmts) {
	case 0:
		return "", "the query is empty"
	case 1:
	default:
		return "", "the answer holds several SQL statements, not one query"
	}
	toks := stmts[0]
	sig := significant(toks)
	first := sig[0]
	for k := 0; first.kind == tkOp && first.text == "(" && k+1 < len(sig); k++ {
		first = sig[k+1]
	}
	if !isKeyword(first, "select") && !isKeyword(first, "with") && !isKeyword(first, "values") {
		return "", "the statement is not a query (it starts with " + strings.ToUpper(first.text) + ")"
	}
	toks = joinSplitOps(toks)
	toks = replaceCurrentYear(toks)
	if !keepDistinct {
		kept := toks[:0:0]
		for _, t := range toks {
			if !isKeyword(t, "distinct") {
				kept = append(kept, t)
			}
		}
		toks = kept
	}
	return strings.TrimSpace(joinTokens(toks)), ""
}

// joinSplitOps turns "> =", "< =" and "! =" (a spelling some models and
// Spider annotations use) into the operators SQLite knows.
func joinSplitOps(toks []sqlToken) []sqlToken {
	out := make([]sqlToken, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tkOp && (t.text == ">" || t.text == "<" || t.text == "!") && i+2 < len(toks) &&
			toks[i+1].kind == tkSpace && toks[i+2].kind == tkOp && toks[i+2].text == "=" {
			out = append(out, sqlToken{kind: tkOp, text: t.text + "="})
			i += 2
			continue
		}
		out = append(out, t)
	}
	return out
}

// replaceCurrentYear turns MySQL's YEAR(CURDATE()), which SQLite lacks
// and a few Spider references use, into 2020, as LiC does.
func replaceCurrentYear(toks []sqlToken) []sqlToken {
	sig := func(i int) (int, bool) { // next significant token index
		for ; i < len(toks); i++ {
			if toks[i].kind != tkSpace && toks[i].kind != tkComment {
				return i, true
			}
		}
		return 0, false
	}
	var out []sqlToken
	for i := 0; i < len(toks); i++ {
		if isKeyword(toks[i], "year") {
			want := []string{"(", "curdate", "(", ")", ")"}
			j, ok := i+1, true
			for _, w := range want {
				k, found := sig(j)
				if !found || !(toks[k].kind == tkOp && toks[k].text == w || isKeyword(toks[k], w)) {
					ok = false
					break
				}
				j = k + 1
			}
			if ok {
				out = append(out, sqlToken{kind: tkNumber, text: "2020"})
				i = j - 1
				continue
			}
		}
		out = append(out, toks[i])
	}
	return out
}

// hasOrderBy reports whether the query sorts its result (ORDER BY anywhere,
// as LiC checks), which makes row order part of the comparison.
func hasOrderBy(query string) bool {
	sig := significant(tokenizeSQL(query))
	for i := 0; i+1 < len(sig); i++ {
		if isKeyword(sig[i], "order") && isKeyword(sig[i+1], "by") {
			return true
		}
	}
	return false
}

// sqlLiteral is a value written in a query, with the column it is most
// likely compared with (empty when none could be told).
type sqlLiteral struct {
	str    bool   // a string; otherwise a number
	value  string // the string's content, or the number's text
	column string // lower-cased column name
	like   bool   // the right side of LIKE/GLOB: a pattern, not a value
}

// queryLiterals lists the literal values of query. A "..." token counts as
// a string when no identifier of the schema has its name (SQLite's own
// rule for double-quoted strings). Each literal is tied to the column it is
// compared with by looking back past operators, NOT/LIKE/IN/BETWEEN/IS,
// parentheses, commas and other literals to the nearest identifier.
func queryLiterals(query string, idents map[string]bool) []sqlLiteral {
	sig := significant(tokenizeSQL(query))
	var out []sqlLiteral
	for i, t := range sig {
		var lit sqlLiteral
		switch t.kind {
		case tkString:
			lit = sqlLiteral{str: true, value: unquote(t.text)}
		case tkQuoted:
			v := unquote(t.text)
			if idents[strings.ToLower(v)] {
				continue
			}
			lit = sqlLiteral{str: true, value: v}
		case tkNumber:
			if i > 0 && isKeyword(sig[i-1], "limit") || i > 0 && isKeyword(sig[i-1], "offset") {
				continue
			}
			lit = sqlLiteral{value: t.text}
			if i > 0 && sig[i-1].kind == tkOp && sig[i-1].text == "-" && (i < 2 || sig[i-2].kind == tkOp || sig[i-2].kind == tkWord && isSQLKeyword(sig[i-2].text)) {
				lit.value = "-" + t.text
			}
		default:
			continue
		}
		lit.column, lit.like = literalColumn(sig, i, idents)
		out = append(out, lit)
	}
	return out
}

func literalColumn(sig []sqlToken, i int, idents map[string]bool) (string, bool) {
	like := false
	for j := i - 1; j >= 0 && j >= i-12; j-- {
		t := sig[j]
		switch t.kind {
		case tkOp:
			switch t.text {
			case "=", "==", "!=", "<>", "<", ">", "<=", ">=", "(", ",", "-", "+":
				continue
			}
			return "", like
		case tkString, tkNumber:
			continue
		case tkQuoted, tkIdent:
			v := strings.ToLower(unquote(t.text))
			if t.kind == tkQuoted && !idents[v] {
				continue // another string literal
			}
			return v, like
		case tkWord:
			w := strings.ToLower(t.text)
			switch w {
			case "not", "in", "is", "between", "and":
				continue
			case "like", "glob":
				like = true
				continue
			}
			if isSQLKeyword(w) {
				return "", like
			}
			return w, like
		default:
			return "", like
		}
	}
	return "", like
}

func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	q := s[0]
	switch q {
	case '\'', '"', '`':
		if s[len(s)-1] == q {
			s = s[1 : len(s)-1]
		} else {
			s = s[1:]
		}
		return strings.ReplaceAll(s, string([]byte{q, q}), string(q))
	case '[':
		return strings.TrimSuffix(s[1:], "]")
	}
	return s
}

// isSQLKeyword covers the reserved words that can precede a literal, so
// that the look-back in literalColumn stops at them.
func isSQLKeyword(w string) bool {
	switch strings.ToLower(w) {
	case "select", "from", "where", "having", "on", "or", "and", "not", "case", "when", "then",
		"else", "end", "limit", "offset", "by", "as", "join", "union", "except", "intersect",
		"values", "set", "group", "order", "asc", "desc", "null", "like", "glob", "in", "is",
		"between", "exists", "all", "distinct", "with", "left", "inner", "outer", "cross", "natural",
		"using", "cast", "collate", "escape", "true", "false":
		return true
	}
	return false
}

// valueSlots returns the indexes in toks of the tokens LiC treats as value
// slots when it plugs the reference's values into a prediction: string
// literals and numbers (a "..." token counts when it is not an identifier
// of the schema).
func valueSlots(toks []sqlToken, idents map[string]bool) []int {
	var out []int
	for i, t := range toks {
		switch t.kind {
		case tkString, tkNumber:
			out = append(out, i)
		case tkQuoted:
			if !idents[strings.ToLower(unquote(t.text))] {
				out = append(out, i)
			}
		}
	}
	return out
}

// plugCandidates returns up to limit variants of pred with the value slots
// filled, in every combination, from the reference's literal tokens (as
// the reference wrote them). It returns nothing when either side has no
// values. The order is deterministic.
func plugCandidates(pred, ref string, idents map[string]bool, limit int) []string {
	rt := tokenizeSQL(ref)
	var vals []string
	seen := map[string]bool{}
	for _, i := range valueSlots(rt, idents) {
		if v := rt[i].text; !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	pt := tokenizeSQL(pred)
	slots := valueSlots(pt, idents)
	if len(vals) == 0 || len(slots) == 0 {
		return nil
	}
	idx := make([]int, len(slots))
	var out []string
	work := append([]sqlToken(nil), pt...)
	for len(out) < limit {
		for k, s := range slots {
			work[s] = sqlToken{kind: tkString, text: vals[idx[k]]}
		}
		if q := joinTokens(work); q != pred {
			out = append(out, q)
		}
		// next combination, odometer style
		k := len(idx) - 1
		for k >= 0 {
			idx[k]++
			if idx[k] < len(vals) {
				break
			}
			idx[k] = 0
			k--
		}
		if k < 0 {
			break
		}
	}
	return out
}
