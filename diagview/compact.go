package diagview

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// WriteCompact writes one line per diagnostic or finding, in the form
// editors and grep understand: `file:line:col: severity rule: message`
// (without the rule for HCL diagnostics). A problem without a source
// location is written with "-" as its file.
func WriteCompact(w io.Writer, diags hcl.Diagnostics, findings []Finding) error {
	var b strings.Builder
	for _, it := range items(diags, findings) {
		loc := "-"
		if hasFile(it.subject) {
			loc = fmt.Sprintf("%s:%d:%d", it.subject.Filename, it.subject.Start.Line, it.subject.Start.Column)
		}
		msg := strings.ReplaceAll(it.summary, "\n", " ")
		if it.rule != "" {
			fmt.Fprintf(&b, "%s: %s %s: %s\n", loc, it.severity, it.rule, msg)
		} else {
			fmt.Fprintf(&b, "%s: %s: %s\n", loc, it.severity, msg)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
