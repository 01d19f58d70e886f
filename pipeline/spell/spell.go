// Package spell guesses which known name a misspelt one was meant to be, so
// an unknown flag, command or config key can be answered with "did you mean
// …?" instead of a list to search.
package spell

import (
	"slices"
	"strings"
)

// Nearest returns the candidate s was most likely meant to be: the one at
// the smallest edit distance when that is at most a third of s's length
// (one slip in five letters), else the only candidate s begins (--dry for
// --dry-run); "" when none is close.
func Nearest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD >= 0 && bestD <= (len([]rune(s))+1)/3 {
		return best
	}
	var prefixed []string
	for _, c := range candidates {
		if len(s) >= 2 && strings.HasPrefix(c, s) && !slices.Contains(prefixed, c) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two neighbours (the
// usual typing slips: confg, cnofig) each count one.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// Three rows suffice: a swap looks two rows back.
	prev2, prev, cur := make([]int, len(y)+1), make([]int, len(y)+1), make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
