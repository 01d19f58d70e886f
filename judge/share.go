package judge

import "strings"

// ParseVariant reads a judge variant name ("fc:ao", "fc:ao/user_only") back
// into its pair and judge context.
func ParseVariant(name string) (Pair, string, error) {
	pair, cx, _ := strings.Cut(name, "/")
	p, err := ParsePair(pair)
	if cx == "" {
		cx = ContextFull
	}
	return p, cx, err
}

// ShareWon reads a judge unit's output and returns the share of its
// comparisons that strategy (one side of p) won on dimension d, a tie
// counting half and several samples averaged. ok is false when the output
// cannot be read or holds no decided comparison.
func ShareWon(out []byte, p Pair, strategy, d string) (share float64, ok bool) {
	o, err := Decode(out)
	if err != nil {
		return 0, false
	}
	var sum float64
	n := 0
	for _, cmp := range o.Comparisons {
		winner := ""
		switch strings.ToLower(cmp.Outcome[d]) {
		case "a":
			winner = p.A
		case "b":
			winner = p.B
		case "tie":
			sum += 0.5
			n++
			continue
		default:
			continue
		}
		n++
		if winner == strategy {
			sum++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}
