package resource

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// managedHeader starts every file gpuform writes in full, so an operator
// who finds it knows where it came from; header(n) names the spec too.
const managedHeader = "# Managed by gpuform.\n"

// headerPrefix starts the first line of every header gpuform writes.
const headerPrefix = "# Managed by gpuform"

// originPrefix starts the header's second line, which says where the spec
// was applied from. It is left out when files are compared: a new commit
// of the spec that changes nothing in a file does not rewrite it, so the
// line names the commit that last wrote the file.
const originPrefix = "# Applied from "

// header is the comment that starts every file node n's spec writes in
// full: the spec's name and where it was applied from, so an operator who
// finds the file knows which spec to change. A node without an owner (a
// test's hand-built node) gets the plain managedHeader.
func header(n *spec.Node) string {
	return headerFor(n.Owner, "")
}

// headerFor is header with what, when not "", saying which part of a
// shared file the spec manages (nccl.conf's keys).
func headerFor(o spec.Owner, what string) string {
	if !o.Claims() {
		return managedHeader
	}
	line := headerPrefix + ", spec " + strconv.Quote(oneLine(o.Spec))
	if what != "" {
		line += " (" + what + ")"
	}
	line += ". Change the spec, not this file.\n"
	var from []string
	if o.Source != "" {
		from = append(from, oneLine(o.Source))
	}
	if o.Commit != "" {
		from = append(from, "at commit "+oneLine(o.Commit))
	}
	if o.AppliedBy != "" {
		from = append(from, "by "+oneLine(o.AppliedBy))
	}
	if len(from) > 0 {
		line += originPrefix + strings.Join(from, " ") + "\n"
	}
	return line
}

// oneLine keeps a header value on its line: a control character would end
// the comment and start a setting.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		// "=" too: nccl.conf's reader takes a line holding one for a
		// setting, whatever it starts with.
		if r < 0x20 || r == 0x7f || r == '=' {
			return '?'
		}
		return r
	}, s)
}

// splitHeader returns the gpuform header line at the top of content ("" when
// there is none) and the rest, without the origin line that may follow it.
func splitHeader(content string) (line, rest string) {
	if !strings.HasPrefix(content, headerPrefix) {
		return "", content
	}
	line, rest, _ = strings.Cut(content, "\n")
	if strings.HasPrefix(rest, originPrefix) {
		_, rest, _ = strings.Cut(rest, "\n")
	}
	return line, rest
}

// sameFile reports whether the file on the node, cur, already is want. The
// origin line does not count (a new commit alone rewrites nothing), nor
// does the plain header of a gpuform that named no spec, or, where
// headerOptional (a file gpuform edits but does not own whole, such as
// nccl.conf), no header at all: such a file is adopted by recording it,
// not rewritten. A header naming another spec does count: the file changes
// hands.
func sameFile(cur, want string, headerOptional bool) bool {
	if cur == want {
		return true
	}
	curLine, curRest := splitHeader(cur)
	wantLine, wantRest := splitHeader(want)
	if curRest != wantRest {
		return false
	}
	return curLine == wantLine || curLine+"\n" == managedHeader || headerOptional && curLine == ""
}

// fileResource converges one configuration file and, optionally, the live
// state the file configures (a sysctl value, a loaded module).
type fileResource struct {
	base
	path string
	// content is the desired file; "" means the file must not exist.
	content string
	// current reads the file from facts; ok is false when it is absent.
	current func(n *facts.Node) (string, bool)
	// attrs reads the attributes shown in the plan from a file content
	// (absent file: ""), and live state where the resource has one.
	attrs func(n *facts.Node, content string, exists bool) Values
	// desired are the attributes after the change.
	desired Values
	// live reports whether the running system already matches; nil means
	// there is no live state beyond the file.
	live func(n *facts.Node) bool
	// then puts the file into effect in the same step as the write, for
	// effects facts cannot see (see fileWrite).
	then effect
	// thenFor, when set, builds then from the file as it is now (grubby
	// must be told which arguments of the old file to take away).
	thenFor func(cur string, exists bool) (effect, error)
	// post are the steps that make the running system follow the file;
	// they run whenever the file or the live state changes.
	post []Step
	// reboot marks a change that only takes effect at the next boot; then
	// live is what the running kernel shows and a mismatch after the file
	// is in place means "reboot pending", not "not converged".
	reboot   bool
	restarts []string
	// afterReboot, when it reports true, turns a live change into one for
	// the next boot: the file is written, post steps do not run (they
	// would load a module of a driver that is not running yet).
	afterReboot func(n *facts.Node) bool
	// edit, when set, computes the desired file from the current one
	// (a file whose other lines belong to the operator); content then
	// only says whether the file is wanted at all.
	edit func(cur []byte, exists bool) (string, error)
	// precheck refuses to plan on a node where the file would be wrong
	// (a sysctl the kernel does not have).
	precheck func(n *facts.Node) error
	// keyed, for a file several specs share key by key, is the change's
	// Keys.
	keyed *KeyedFile
}

func managedFile(path string) func(n *facts.Node) (string, bool) {
	return func(n *facts.Node) (string, bool) { return n.ManagedFile(path) }
}

func (r *fileResource) Diff(n *facts.Node) (Change, error) {
	if r.precheck != nil {
		if err := r.precheck(n); err != nil {
			return Change{}, err
		}
	}
	cur, exists := r.current(n)
	content := r.content
	if r.edit != nil && content != "" {
		cf := currentFile(n, r.path)
		if cf.Error != "" {
			return Change{}, fmt.Errorf("%s: gpuform will not rewrite it: %s", r.path, cf.Error)
		}
		var err error
		if content, err = r.edit(cf.Data, cf.Exists); err != nil {
			return Change{}, fmt.Errorf("%s: %w", r.path, err)
		}
	}
	fileOK := exists == (content != "") && (!exists || sameFile(cur, content, r.edit != nil))
	liveOK := r.live == nil || r.live(n)
	before := Values(nil)
	if exists || (r.live != nil && r.content != "") {
		before = r.attrs(n, cur, exists)
	}
	after := Values(nil)
	if r.content != "" {
		after = r.desired
	}
	// An earlier apply wrote the file but was cut off before putting it
	// into effect (its marker is still there): the step must run again.
	if _, pending := n.ManagedFile(PendingMarker(r.path)); pending && (!r.then.none() || r.thenFor != nil) && r.content != "" {
		fileOK = false
		before, after = copyAttrs(before), copyAttrs(after)
		before["in effect"], after["in effect"] = StringVal("false"), StringVal("true")
	}
	if exists && content != "" && !sameFile(cur, content, r.edit != nil) && diffAction(before, after) == NoOp {
		// Same settings, different text (comments, order): show why.
		before = copyAttrs(before)
		after = copyAttrs(after)
		before["content"] = StringVal("sha256:" + shortSum(cur))
		after["content"] = StringVal("sha256:" + shortSum(content))
	}
	c := r.change(before, after)
	c.Path = r.path
	c.Keys = r.keyed
	deferred := r.afterReboot != nil && r.content != "" && r.afterReboot(n)
	reboot := r.reboot || deferred
	if fileOK && (liveOK || reboot) {
		c.Action = NoOp
		c.After = c.Before
		c.RebootPending = reboot && !liveOK && r.content != ""
		return c, nil
	}
	switch {
	case r.content == "" && exists:
		c.Action = Delete
	case !exists:
		c.Action = Create
	default:
		c.Action = Update
	}
	c.RebootRequired = r.reboot || deferred && !liveOK
	c.Restarts = r.restarts
	if !fileOK {
		then := r.then
		if r.thenFor != nil {
			var err error
			if then, err = r.thenFor(cur, exists); err != nil {
				return Change{}, err
			}
		}
		var s Step
		var err error
		if r.content == "" {
			s, err = removeFileStep(r.path, currentFile(n, r.path))
			if err == nil && !then.none() {
				c.Steps = append(c.Steps, s)
				s = effectStep("run "+then.String(), then)
			}
		} else {
			desc := "write " + r.path
			if !then.none() {
				desc += " and run " + then.String()
			}
			s, err = fileWrite{desc: desc, path: r.path, content: content, cur: currentFile(n, r.path), then: then}.step()
		}
		if err != nil {
			return Change{}, err
		}
		c.Steps = append(c.Steps, s)
	}
	if (r.content != "" || exists) && !deferred {
		c.Steps = append(c.Steps, r.post...)
	}
	return c, nil
}

func copyAttrs(m Values) Values {
	out := make(Values, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func shortSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// normSpace collapses runs of blanks, so "4096\t87380" equals "4096 87380".
func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// keyValueLines reads "key = value" / "key=value" lines, skipping comments.
func keyValueLines(content string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		out[strings.TrimSpace(k)] = normSpace(v)
	}
	return out
}

// absentFile is a resource whose file gpuform wrote earlier and the spec no
// longer asks for: it plans a delete when the file is there, nothing else.
func absentFile(name, path string) *fileResource {
	return &fileResource{base: base{name: name}, path: path, current: managedFile(path),
		attrs: func(_ *facts.Node, cur string, _ bool) Values {
			return Values{"file": StringVal(path), "content": StringVal("sha256:" + shortSum(cur))}
		}}
}
