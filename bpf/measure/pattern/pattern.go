// Package pattern is the testing package's rule for which benchmarks a
// command line's -test.bench and -test.skip run, so that the engine can
// set up and measure, before its first b.Run, only the rows that will be
// reported (measure.Family).
package pattern

import (
	"flag"
	"regexp"
	"strings"
)

// Selected says whether the benchmark named name (a sub-benchmark's
// whole name, BenchmarkXDP/prog=drop/size=64) runs as a benchmark of its
// own under the command line's -test.bench and -test.skip, as the
// testing package decides it: the name split at '/' and each element
// matched by the pattern's element at its depth (a pattern split at '/'
// and '|' outside brackets and parentheses), a pattern deeper than the
// name selecting none of it as a result.
func Selected(name string) bool {
	return selected(flagValue("test.bench"), flagValue("test.skip"), name)
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func selected(bench, skip, name string) bool {
	elems := strings.Split(rewriteSpaces(name), "/")
	ok, partial := matchAny(splitPattern(bench), elems, true)
	if !ok || partial {
		return false
	}
	if skip == "" {
		return true
	}
	s, partialSkip := matchAny(splitPattern(skip), elems, false)
	return !s || partialSkip
}

// matchAny matches elems against alternatives of '/'-separated element
// patterns; an empty pattern list matches everything (as an empty -bench
// does at depth).
func matchAny(alts [][]string, elems []string, emptyMatches bool) (ok, partial bool) {
	if len(alts) == 0 {
		return emptyMatches, false
	}
	for _, pats := range alts {
		if ok, partial = matchElems(pats, elems); ok {
			return ok, partial
		}
	}
	return false, false
}

func matchElems(pats, elems []string) (ok, partial bool) {
	for i, e := range elems {
		if i >= len(pats) {
			break
		}
		re, err := regexp.Compile(rewriteSpaces(pats[i]))
		if err != nil || !re.MatchString(e) {
			return false, false
		}
	}
	return true, len(elems) < len(pats)
}

// splitPattern splits a -test.bench pattern at '|' into alternatives and
// each at '/' into element patterns, outside brackets and parentheses.
func splitPattern(s string) [][]string {
	if s == "" {
		return nil
	}
	var alts [][]string
	var cur []string
	brackets, parens, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			brackets++
		case ']':
			brackets = max(brackets-1, 0)
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '\\':
			i++
		case '/', '|':
			if brackets == 0 && parens == 0 {
				cur = append(cur, s[start:i])
				start = i + 1
				if s[i] == '|' {
					alts, cur = append(alts, cur), nil
				}
			}
		}
	}
	return append(alts, append(cur, s[start:]))
}

// rewriteSpaces replaces spaces with underscores, as testing does in
// names and patterns.
func rewriteSpaces(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' {
			return '_'
		}
		return r
	}, s)
}
