package grade

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// resultSet is a query result with every cell reduced to a comparable key.
type resultSet struct {
	cols int
	rows [][]string
}

// cellKey reduces a value read from SQLite to a key that is equal exactly
// when the values are equal the way LiC's Python comparison sees them:
// 3 and 3.0 are one number, the text "3" is not the number 3, and NULL is
// itself. Floats are compared to 12 significant digits, so that AVG and
// SUM/COUNT agree. Dates need care: the driver turns text in a DATE,
// DATETIME or TIMESTAMP column into a time value while the same text
// reached through an expression (MAX(date)) stays text, so text that reads
// as a timestamp and time values both become one canonical spelling.
func cellKey(v any) string {
	switch x := v.(type) {
	case nil:
		return "n"
	case int64:
		return "i" + strconv.FormatInt(x, 10)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return "i" + strconv.FormatInt(int64(x), 10)
		}
		return "f" + strconv.FormatFloat(x, 'g', 12, 64)
	case bool:
		if x {
			return "i1"
		}
		return "i0"
	case string:
		return "s" + canonTime(x)
	case []byte:
		return "b" + string(x)
	case time.Time:
		if x.IsZero() {
			return "t?"
		}
		return "s" + x.UTC().Format(canonTimeLayout)
	}
	return fmt.Sprintf("?%v", v)
}

const canonTimeLayout = "2006-01-02 15:04:05.999999999"

// timeLayouts are the text forms the go-sqlite3 driver reads as time
// values in DATE/DATETIME/TIMESTAMP columns.
var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

func canonTime(s string) string {
	if len(s) < 10 || !isDigit(s[0]) || s[4] != '-' {
		return s
	}
	t := strings.TrimSuffix(s, "Z")
	for _, layout := range timeLayouts {
		if tm, err := time.ParseInLocation(layout, t, time.UTC); err == nil {
			return tm.UTC().Format(canonTimeLayout)
		}
	}
	return s
}

// sameResult reports whether got has the same denotation as ref, as LiC
// (after Spider's test-suite evaluation) decides it: two empty results
// match; otherwise the row and column counts must agree and some order of
// got's columns must make its rows equal to ref's, in order when ordered
// is set, as multisets otherwise. Column order is free because a question
// rarely fixes it. The reason says how they differ.
func sameResult(ref, got resultSet, ordered bool) (bool, string) {
	if len(ref.rows) == 0 && len(got.rows) == 0 {
		return true, ""
	}
	if len(ref.rows) != len(got.rows) {
		return false, fmt.Sprintf("%s instead of %s", plural(len(got.rows), "row"), plural(len(ref.rows), "row"))
	}
	if ref.cols != got.cols {
		return false, fmt.Sprintf("%s instead of %s", plural(got.cols, "column"), plural(ref.cols, "column"))
	}
	n := ref.cols
	// A column of got can stand for a column of ref only if both hold the
	// same multiset of values; that prunes almost every permutation.
	sig := func(rs resultSet, j int) string {
		vals := make([]string, len(rs.rows))
		for i, r := range rs.rows {
			vals[i] = r[j]
		}
		sort.Strings(vals)
		return joinKeys(vals)
	}
	refSig := make([]string, n)
	gotSig := make([]string, n)
	for j := 0; j < n; j++ {
		refSig[j], gotSig[j] = sig(ref, j), sig(got, j)
	}
	cands := make([][]int, n)
	for j := 0; j < n; j++ {
		for k := 0; k < n; k++ {
			if refSig[j] == gotSig[k] {
				cands[j] = append(cands[j], k)
			}
		}
		if len(cands[j]) == 0 {
			return false, fmt.Sprintf("no column holds the values of the reference's column %d", j+1)
		}
	}
	var refRows map[string]int
	if !ordered {
		refRows = map[string]int{}
		for _, r := range ref.rows {
			refRows[joinKeys(r)]++
		}
	}
	perm := make([]int, n)
	used := make([]bool, n)
	tries := 0
	const maxTries = 10000
	var search func(j int) bool
	search = func(j int) bool {
		if j == n {
			tries++
			return rowsMatch(ref, got, perm, ordered, refRows)
		}
		for _, k := range cands[j] {
			if used[k] || tries >= maxTries {
				continue
			}
			used[k], perm[j] = true, k
			if search(j + 1) {
				return true
			}
			used[k] = false
		}
		return false
	}
	if search(0) {
		return true, ""
	}
	if ordered {
		return false, "the rows differ (order counts: the reference has ORDER BY)"
	}
	return false, "the rows differ"
}

func rowsMatch(ref, got resultSet, perm []int, ordered bool, refRows map[string]int) bool {
	row := make([]string, len(perm))
	if ordered {
		for i, r := range got.rows {
			for j, k := range perm {
				if ref.rows[i][j] != r[k] {
					return false
				}
			}
		}
		return true
	}
	left := make(map[string]int, len(refRows))
	for k, v := range refRows {
		left[k] = v
	}
	for _, r := range got.rows {
		for j, k := range perm {
			row[j] = r[k]
		}
		key := joinKeys(row)
		if left[key] == 0 {
			return false
		}
		left[key]--
	}
	return true
}

// joinKeys joins keys unambiguously (each is length-prefixed).
func joinKeys(keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
