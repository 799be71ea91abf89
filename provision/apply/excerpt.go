package apply

import (
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// errorLineRE matches the lines in which a package manager says why it
// failed: apt's "E:" lines and unmet-dependency report, dpkg's errors, dnf's
// "Error:" and problem list. They lead a failure message, because the last
// lines of apt's output are often a consequence ("is not available, but is
// referred to by another package") rather than the cause.
var errorLineRE = lazyre.New(`^(E: |dpkg: error|dpkg: dependency problems|Error: |Error:$|\s*Problem( \d+)?: |\s+- |\s*\S+ : (Pre)?Depends: |\s*\S+ : (Conflicts|Breaks): |\s+(Pre)?Depends: |\s+(Conflicts|Breaks): )`)

// maxErrorLines bounds the error lines kept, so that a dependency report
// hundreds of lines long still gives a readable message.
const maxErrorLines = 8

// failureExcerpt is what a failed step's message quotes from the host: the
// package manager's error lines first (at most maxErrorLines), then the last
// lines of the output not already quoted, n lines in all at least.
func failureExcerpt(stderr, stdout string, n int) string {
	all := strings.Split(strings.TrimSpace(stderr+"\n"+stdout), "\n")
	var errs []string
	seen := map[string]bool{}
	for _, l := range all {
		l = strings.TrimRight(l, " \r")
		if l == "" || seen[l] || !errorLineRE.MatchString(l) {
			continue
		}
		// "- " lists are dnf's only after a Problem line.
		if strings.HasPrefix(strings.TrimSpace(l), "- ") && !hasProblem(errs) {
			continue
		}
		seen[l] = true
		if len(errs) < maxErrorLines {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) == 0 {
		return lastLines(stderr+stdout, n)
	}
	var tail []string
	for i := len(all) - 1; i >= 0 && len(tail) < 2; i-- {
		l := strings.TrimSpace(all[i])
		if l != "" && !seen[strings.TrimRight(all[i], " \r")] {
			tail = append([]string{l}, tail...)
		}
	}
	return lastLines(strings.Join(append(errs, tail...), "\n"), len(errs)+len(tail))
}

func hasProblem(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "Problem") {
			return true
		}
	}
	return false
}
