package resource

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nicirq"
)

// irqbalanceKey is the setting of irqbalance's environment file that its
// unit passes on the command line (Debian's and RHEL's units alike).
const irqbalanceKey = "IRQBALANCE_ARGS"

// irqbalancePolicy is the argument gpuform owns in irqbalanceKey: irqbalance
// asks the script about every IRQ and leaves the ones it bans alone.
// --banirq would name IRQ numbers, which change at every boot.
const irqbalancePolicy = "--policyscript=" + nicirq.File

// irqbalanceFile is irqbalance's environment file on the host's family.
func irqbalanceFile(family string) string {
	if family == "rhel" {
		return "/etc/sysconfig/irqbalance"
	}
	return "/etc/default/irqbalance"
}

// irqBalanceReads declares what irqbalance reads back on a node: the pending
// marker of an interrupted write (in pendingDir), irqbalance's settings on
// either family (it edits one key) and its unit.
func irqBalanceReads() facts.Reads {
	return facts.Reads{ConfigFiles: []string{irqbalanceFile("debian"), irqbalanceFile("rhel")}, ManagedDirs: []string{pendingDir}, Units: []string{"irqbalance.service"}}
}

// buildIRQBalance keeps irqbalance off the NICs' interrupts: it adds
// gpuform's --policyscript to IRQBALANCE_ARGS in irqbalance's settings,
// keeping the operator's other arguments and every other line byte for
// byte, and restarts irqbalance (if it runs) only when the file changed.
// Without nic_irq_affinity it takes its argument out again. Nothing is
// planned where irqbalance is not installed.
func buildIRQBalance(in *buildInput) ([]Resource, []string, error) {
	path := irqbalanceFile(in.family)
	cf := currentFile(in.f, path)
	installed := cf.Exists || in.f.Unit("irqbalance.service").Enabled != "not-found"
	if !installed {
		return nil, nil, nil
	}
	wanted := nicirq.Wanted(in.n)
	curArgs, _ := irqbalanceArgs(string(cf.Data))
	has := false
	for _, a := range curArgs {
		if a == irqbalancePolicy {
			has = true
		}
	}
	if !wanted && !has {
		return nil, nil, nil
	}
	var warnings []string
	edit := func(cur []byte, _ bool) (string, error) {
		args, quoted := irqbalanceArgs(string(cur))
		var keep []string
		for _, a := range args {
			if a == irqbalancePolicy {
				continue
			}
			if wanted && (strings.HasPrefix(a, "--policyscript") || strings.HasPrefix(a, "-l")) {
				return "", fmt.Errorf("%s already sets a policy script (%s) and irqbalance takes one: merge gpuform's (%s pins the NICs' IRQs and prints ban=true for them) into yours, or turn nic_irq_affinity off", irqbalanceKey, a, nicirq.File)
			}
			keep = append(keep, a)
		}
		if wanted {
			keep = append(keep, irqbalancePolicy)
		}
		if len(keep) == 0 {
			return setKeyLines(cur, nil, nil, []string{irqbalanceKey})
		}
		v := strings.Join(keep, " ")
		if quoted || len(keep) > 1 {
			v = `"` + v + `"`
		}
		return setKeyLines(cur, []string{irqbalanceKey}, map[string]string{irqbalanceKey: v}, nil)
	}
	after := Values{}
	if wanted {
		after["policy script"] = StringVal(nicirq.File)
	}
	before := Values{}
	if has {
		before["policy script"] = StringVal(nicirq.File)
	}
	return []Resource{&fileResource{
		base: base{name: IRQBalance},
		path: path,
		// The file is wanted (edit computes it) even when only gpuform's
		// argument is being taken out.
		content: "wanted",
		edit:    edit,
		current: func(f *facts.Node) (string, bool) {
			c := currentFile(f, path)
			return string(c.Data), c.Exists
		},
		attrs: func(*facts.Node, string, bool) Values {
			return before
		},
		desired:  after,
		restarts: []string{"irqbalance.service"},
		// try-restart: an irqbalance that is not running stays stopped.
		then: tryRestart("irqbalance.service"),
	}}, warnings, nil
}

// irqbalanceArgs reads IRQBALANCE_ARGS from an environment file: its
// arguments, and whether the value was in double quotes. systemd's
// EnvironmentFile= reads the same "KEY=value" / KEY="value" lines.
func irqbalanceArgs(content string) (args []string, quoted bool) {
	v, ok := keyValueLines(content)[irqbalanceKey]
	if !ok {
		return nil, false
	}
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		v, quoted = v[1:len(v)-1], true
	}
	return strings.Fields(v), quoted
}
