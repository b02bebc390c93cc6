// Package runlog writes what a run's record says (measure.Record): the
// summary after the results, each line starting with "# " so that
// benchfmt and benchstat pass over it, and the diagnostics file's lines.
package runlog

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// A Row is what became of one row run: measured, skipped (why: its
// reason, "" when none was recorded) or failed.
type Row struct {
	Name            string
	Skipped, Failed bool
	Why             string
}

// Summary prints how many rows were measured, the skipped ones grouped
// by reason, the failed ones, and the flagged ones with why (flags, by
// row name). It prints nothing for no rows.
func Summary(w io.Writer, rows []Row, flags map[string][]string) {
	if len(rows) == 0 {
		return
	}
	var measured int
	var failed []string
	skipped := map[string][]string{}
	for _, o := range rows {
		switch {
		case o.Skipped:
			why := cmp.Or(o.Why, "no reason recorded (run with -v to see it)")
			skipped[why] = append(skipped[why], o.Name)
		case o.Failed:
			failed = append(failed, o.Name)
		default:
			measured++
		}
	}
	nskip := len(rows) - measured - len(failed)
	fmt.Fprintf(w, "# bpfbench summary: %d rows measured, %d skipped, %d failed\n", measured, nskip, len(failed))
	reasons := slices.Sorted(maps.Keys(skipped))
	slices.SortStableFunc(reasons, func(a, b string) int { return len(skipped[b]) - len(skipped[a]) })
	for _, why := range reasons {
		names := skipped[why]
		fmt.Fprintf(w, "# skipped %d: %s\n", len(names), why)
		for _, line := range wrapNames(names) {
			fmt.Fprintf(w, "#     %s\n", line)
		}
	}
	for _, n := range failed {
		fmt.Fprintf(w, "# failed: %s\n", n)
	}
	for _, n := range slices.Sorted(maps.Keys(flags)) {
		fmt.Fprintf(w, "# flagged: %s: %s\n", n, strings.Join(flags[n], "; "))
	}
}

// wrapNames lists names compactly: the names of one family after its
// first with the family's prefix left out, about 100 characters a line.
func wrapNames(names []string) []string {
	var lines []string
	var cur strings.Builder
	family := ""
	for _, n := range names {
		f, rest, _ := strings.Cut(n, "/")
		item := n
		if f == family && cur.Len() > 0 {
			item = rest
		}
		if cur.Len() > 0 && cur.Len()+len(item) > 100 {
			lines = append(lines, cur.String())
			cur.Reset()
			item = n
		}
		if cur.Len() > 0 {
			cur.WriteString(" ")
		}
		cur.WriteString(item)
		family = f
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// A Figure is one diagnostic of a row: a value in a unit.
type Figure struct {
	Unit  string
	Value float64
}

// Diagnostics prints one benchmark line per row of order that has
// diagnostics (figs, by row name), a row's last value of a unit winning,
// as in testing's own lines.
func Diagnostics(w io.Writer, order []string, figs map[string][]Figure) error {
	for _, name := range order {
		var b strings.Builder
		fmt.Fprintf(&b, "%s 1", name)
		last := map[string]float64{}
		for _, d := range figs[name] {
			last[d.Unit] = d.Value
		}
		for _, u := range slices.Sorted(maps.Keys(last)) {
			fmt.Fprintf(&b, "\t%g %s", last[u], u)
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}
