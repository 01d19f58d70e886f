package grade_test

import "fmt"

func fmtSscanf(s, format string, args ...any) (int, error) { return fmt.Sscanf(s, format, args...) }
