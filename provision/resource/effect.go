package resource

import "github.com/gpuform/gpuform/provision/nodesh"

// effect is what puts a file's change into effect: one action of
// apply_effect (scripts/effect_lib.sh) and its arguments, which
// file_write.sh runs after the rename (and undoes the write when it fails)
// and apply_effect.sh runs as a step of its own. The step names the
// action; the command it runs is written out in effect_lib.sh, so no
// shell text built here is ever run.
type effect struct {
	// action is apply_effect's ACTION (an effect* constant); "" is none.
	action string
	// args are its arguments.
	args []string
}

// Actions of apply_effect (scripts/effect_lib.sh).
const (
	effectUpdateGrub      = "update-grub"
	effectGrubby          = "grubby"
	effectTryRestart      = "try-restart"
	effectDaemonReload    = "daemon-reload"
	effectMakeExecutable  = "make-executable"
	effectUnlinkAndReload = "unlink-and-reload"
	effectIMEXChannel     = "create-imex-channel"
)

// updateGrub regenerates GRUB's configuration from its drop-ins.
func updateGrub() effect { return effect{action: effectUpdateGrub} }

// grubbyArgs edits every installed kernel's boot entry: the arguments
// remove (space-separated) are taken away and add put on, each part left
// out when empty.
func grubbyArgs(remove, add string) effect {
	return effect{action: effectGrubby, args: []string{remove, add}}
}

// tryRestart restarts unit if it is running (systemctl try-restart).
func tryRestart(unit string) effect { return effect{action: effectTryRestart, args: []string{unit}} }

// daemonReload makes systemd read its unit files again.
func daemonReload() effect { return effect{action: effectDaemonReload} }

// makeExecutable gives path mode 0755.
func makeExecutable(path string) effect {
	return effect{action: effectMakeExecutable, args: []string{path}}
}

// unlinkAndReload removes path (a unit's enable link) and reloads systemd.
func unlinkAndReload(path string) effect {
	return effect{action: effectUnlinkAndReload, args: []string{path}}
}

// createIMEXChannel makes the default IMEX channel device now, with the
// major the running driver registered, when it is missing.
func createIMEXChannel(major string) effect {
	return effect{action: effectIMEXChannel, args: []string{major}}
}

// none reports whether there is no effect to run.
func (e effect) none() bool { return e.action == "" }

// call is the effect as apply_effect's arguments: the action, then its
// arguments; nil for none.
func (e effect) call() []string {
	if e.none() {
		return nil
	}
	return append([]string{e.action}, e.args...)
}

// String is the command the effect runs, as a step's description shows it
// (and as it read when it was shell text built here): for the plan's
// reader only, never run.
func (e effect) String() string {
	arg := func(i int) string {
		if i < len(e.args) {
			return e.args[i]
		}
		return ""
	}
	switch e.action {
	case effectUpdateGrub:
		return "update-grub"
	case effectGrubby:
		s := "grubby --update-kernel=ALL"
		if r := arg(0); r != "" {
			s += " --remove-args=" + q(r)
		}
		if a := arg(1); a != "" {
			s += " --args=" + q(a)
		}
		return s
	case effectTryRestart:
		return "systemctl try-restart " + q(arg(0))
	case effectDaemonReload:
		return "systemctl daemon-reload"
	case effectMakeExecutable:
		return "chmod 0755 " + `"$R"` + q(arg(0))
	case effectUnlinkAndReload:
		return `rm -f "$R"` + q(arg(0)) + ` && systemctl daemon-reload`
	case effectIMEXChannel:
		return "mknod -m 0666 /dev/nvidia-caps-imex-channels/channel0 c " + q(arg(0)) + " 0 (when missing)"
	}
	return e.action
}

// effectStep runs e as a step of its own (scripts/apply_effect.sh).
func effectStep(desc string, e effect) Step {
	return Step{Description: desc, Script: nodesh.Script(applyEffectScript, e.call(), effectLibScript), Become: true}
}
