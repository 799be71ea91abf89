package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// MaxNesting is how deeply brackets, braces and parentheses may nest in
// any HCL text gpuform parses. The HCL parser recurses once per level and
// a few hundred thousand levels overflow the Go stack, a crash no recover
// can catch; no real spec comes near this limit.
const MaxNesting = 10000

// CheckNesting reports text nested deeper than MaxNesting, before it is
// handed to the HCL parser. Brackets inside strings count too: the check
// only has to be generous, not exact.
func CheckNesting(src []byte, filename string) hcl.Diagnostics {
	depth, line, col := 0, 1, 1
	for i, c := range src {
		switch c {
		case '[', '{', '(':
			depth++
			if depth > MaxNesting {
				pos := hcl.Pos{Line: line, Column: col, Byte: i}
				return hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Nesting too deep",
					Detail:   fmt.Sprintf("Brackets and braces nest more than %d levels deep here; gpuform does not parse text nested this deeply.", MaxNesting),
					Subject:  &hcl.Range{Filename: filename, Start: pos, End: hcl.Pos{Line: line, Column: col + 1, Byte: i + 1}},
				}}
			}
		case ']', '}', ')':
			if depth > 0 {
				depth--
			}
		case '\n':
			line, col = line+1, 0
		}
		col++
	}
	return nil
}
