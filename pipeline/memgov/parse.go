package memgov

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseLimit reads a soft limit as GOMEMLIMIT writes it (a byte count with
// an optional B, KiB, MiB, GiB or TiB suffix; KB, MB, GB and TB are taken
// as powers of 1000), or "off" (0).
func ParseLimit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") || s == "0" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	mult := int64(1)
	num := s
	for _, u := range units {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			mult, num = u.mult, strings.TrimSpace(s[:len(s)-len(u.suffix)])
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("want a size such as 512MiB, 2GiB or 'off'")
	}
	n := int64(f * float64(mult))
	if n < 16<<20 {
		return 0, fmt.Errorf("%d bytes is too small to run in; give at least 16MiB", n)
	}
	return n, nil
}
