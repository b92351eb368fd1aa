package main

import (
	"fmt"
	"strings"
)

// unknownCommand is the one-line error for a subcommand that is not one
// of names: it names the typo, suggests the closest name when one is
// close, and lists them all (`unknown command "chek": did you mean
// "check"? (want watch or check)`), instead of printing the usage.
func unknownCommand(got string, names []string) error {
	msg := fmt.Sprintf("unknown command %q", got)
	if s := closest(got, names); s != "" {
		msg += ": did you mean " + s + "?"
	}
	return fmt.Errorf("%s (want %s)", msg, orList(names))
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// closest is what got is most likely a typo of, as `"a"` or `"a" or
// "b"`: the only name it begins, else the nearest names by edit distance
// when that is at most 2 (1 for words of 4 letters or fewer); "" when
// none is that close.
func closest(got string, names []string) string {
	got = strings.ToLower(got)
	var prefixed []string
	for _, n := range names {
		if got != "" && strings.HasPrefix(n, got) {
			prefixed = append(prefixed, n)
		}
	}
	if len(prefixed) == 1 {
		return fmt.Sprintf("%q", prefixed[0])
	}
	limit := 2
	if len(got) <= 4 {
		limit = 1
	}
	var best []string
	bestD := limit + 1
	for _, n := range names {
		switch d := editDistance(got, n); {
		case d < bestD:
			best, bestD = []string{fmt.Sprintf("%q", n)}, d
		case d == bestD:
			best = append(best, fmt.Sprintf("%q", n))
		}
	}
	return orList(best)
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment: an adjacent swap counts one) between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
