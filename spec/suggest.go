package spec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
)

// nearestNames returns up to three candidates a mistyped name most likely
// meant, best first. A candidate that contains the name or is contained in
// it ranks before one that is merely a few edits away, because a typo of a
// long name is usually a shortened one ("driver" for "driver_version",
// "hgx-h100" for "hgx-h100-8gpu"), which edit distance alone ranks last.
func nearestNames(name string, candidates []string) []string {
	type scored struct {
		name  string
		rank  int
		score int
	}
	lname := strings.ToLower(name)
	var found []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		switch {
		case lc == lname:
			continue
		case lname != "" && (strings.Contains(lc, lname) || strings.Contains(lname, lc)):
			found = append(found, scored{c, 0, abs(len(lc) - len(lname))})
		default:
			d := levenshtein.Distance(lname, lc, nil)
			if d <= max(2, len(lname)/4) {
				found = append(found, scored{c, 1, d})
			}
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].rank != found[j].rank {
			return found[i].rank < found[j].rank
		}
		if found[i].score != found[j].score {
			return found[i].score < found[j].score
		}
		return found[i].name < found[j].name
	})
	var out []string
	for i := 0; i < len(found) && i < 3; i++ {
		out = append(out, found[i].name)
	}
	return out
}

// didYouMeanNames is " Did you mean "a" or "b"?" for the nearest names, or
// "" when none is near.
func didYouMeanNames(name string, candidates []string) string {
	return didYouMean(nearestNames(name, candidates))
}

// DidYouMean is didYouMeanNames for the packages above spec (the
// knowledge base's tables): the one spelling of a suggestion.
func DidYouMean(name string, candidates []string) string {
	return didYouMeanNames(name, candidates)
}

// didYouMean is " Did you mean "a" or "b"?", or "" for no names.
func didYouMean(near []string) string {
	if len(near) == 0 {
		return ""
	}
	quoted := make([]string, len(near))
	for i, n := range near {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	if len(quoted) == 1 {
		return " Did you mean " + quoted[0] + "?"
	}
	return " Did you mean " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1] + "?"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
