package stat

import (
	"fmt"
	"math"
	"strings"
)

// FormatTrim is Format without trailing zeros: how a published figure
// is printed.
func FormatTrim(v float64) string {
	s := Format(v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Format formats a value in ns as the report prints estimates: two
// decimals below 100, one above, ±∞ for no bound.
func Format(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+∞"
	case math.IsInf(v, -1):
		return "-∞"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
