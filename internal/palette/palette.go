// Package palette is the one set of colours gpuform's human output uses,
// so that a failure is the same red in plan, apply, verify and lint and a
// pass the same green (issue 34: apply's failures were plain while
// verify's FAIL was red). Colours mean the same everywhere:
//
//	Fail    bold red      FAIL, Error:, failed, NOT RUN that was needed
//	Destroy red           - destroy
//	Warn    bold yellow   ERROR (could not judge), Warning:
//	Change  yellow        ~ update in place, downgrades
//	Caution yellow        passed but slow, a pair not run
//	Pass    green         pass, + create, No changes., succeeded
//	Reboot  magenta       reboot required / pending
//	Note    cyan          notes, hints, a lint rule's name
//	Info    bold cyan     Info: (a diagnostic)
//	Dim     faint         skip, not run, sources
//	Bold    bold          headings ("Host …", "Plan:")
//	Underline             the offending expression of a snippet
//
// A Palette that is off writes text unchanged: the CLI turns it on only
// for a terminal, and never with NO_COLOR set or -no-color given.
package palette

// Role is what a coloured piece of text says.
type Role string

// The roles, each an SGR parameter string.
const (
	Fail      Role = "1;31"
	Destroy   Role = "31"
	Warn      Role = "1;33"
	Change    Role = "33"
	Caution   Role = "33"
	Pass      Role = "32"
	Success   Role = "1;32"
	Reboot    Role = "35"
	Note      Role = "36"
	Info      Role = "1;36"
	Dim       Role = "2"
	Bold      Role = "1"
	Underline Role = "4"
)

// Palette paints text when On.
type Palette struct{ On bool }

// New returns a palette that paints when on is true.
func New(on bool) Palette { return Palette{On: on} }

// Paint wraps s in role's colour and a reset; s as it is when the palette
// is off or s is empty.
func (p Palette) Paint(r Role, s string) string {
	if !p.On || s == "" {
		return s
	}
	return "\x1b[" + string(r) + "m" + s + "\x1b[0m"
}

// Fail, Pass, Warn, Dim and Bold are Paint with that role.
func (p Palette) Fail(s string) string { return p.Paint(Fail, s) }

// Pass paints s green.
func (p Palette) Pass(s string) string { return p.Paint(Pass, s) }

// Warn paints s bold yellow.
func (p Palette) Warn(s string) string { return p.Paint(Warn, s) }

// Dim paints s faint.
func (p Palette) Dim(s string) string { return p.Paint(Dim, s) }

// Bold paints s bold.
func (p Palette) Bold(s string) string { return p.Paint(Bold, s) }
