package resource

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// managedHeader starts every file gpuform writes in full, so an operator
// who finds it knows where it came from.
const managedHeader = "# Managed by gpuform.\n"

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
	attrs func(n *facts.Node, content string, exists bool) map[string]string
	// desired are the attributes after the change.
	desired map[string]string
	// live reports whether the running system already matches; nil means
	// there is no live state beyond the file.
	live func(n *facts.Node) bool
	// then puts the file into effect in the same step as the write, for
	// effects facts cannot see (see writeFileStep).
	then string
	// thenFor, when set, builds then from the file as it is now (grubby
	// must be told which arguments of the old file to take away).
	thenFor func(cur string, exists bool) (string, error)
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
	fileOK := exists == (content != "") && (!exists || cur == content)
	liveOK := r.live == nil || r.live(n)
	before := map[string]string(nil)
	if exists || (r.live != nil && r.content != "") {
		before = r.attrs(n, cur, exists)
	}
	after := map[string]string(nil)
	if r.content != "" {
		after = r.desired
	}
	// An earlier apply wrote the file but was cut off before putting it
	// into effect (its marker is still there): the step must run again.
	if _, pending := n.ManagedFile(PendingMarker(r.path)); pending && (r.then != "" || r.thenFor != nil) && r.content != "" {
		fileOK = false
		before, after = copyAttrs(before), copyAttrs(after)
		before["in effect"], after["in effect"] = "false", "true"
	}
	if exists && content != "" && cur != content && diffAction(before, after) == NoOp {
		// Same settings, different text (comments, order): show why.
		before = copyAttrs(before)
		after = copyAttrs(after)
		before["content"] = "sha256:" + shortSum(cur)
		after["content"] = "sha256:" + shortSum(content)
	}
	c := r.change(before, after)
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
			if err == nil && then != "" {
				c.Steps = append(c.Steps, s)
				s = commandStep("run "+then, then)
			}
		} else {
			desc := "write " + r.path
			if then != "" {
				desc += " and run " + then
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

func copyAttrs(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
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
		attrs: func(_ *facts.Node, cur string, _ bool) map[string]string {
			return attrs{"file": path, "content": "sha256:" + shortSum(cur)}
		}}
}
