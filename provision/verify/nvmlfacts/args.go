package nvmlfacts

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AgentCommand is the hidden subcommand of the gpuform binary that runs the
// agent; the controller puts AgentOptions.Args() after it.
func AgentCommand() []string { return []string{"agent", "nvml", "--json"} }

// Args renders the options as the agent's flags, the inverse of
// ParseAgentFlags: --xid-window D, --nic NAME=PCI (repeated), --mock NAME,
// --fault KIND:GPU[:XID] or KIND@BUSID[:XID] (repeated), --sys-root DIR. Topology, MaxCPUs and
// MaxNUMANodes are not flags: the agent uses their defaults.
func (o AgentOptions) Args() []string {
	var args []string
	if o.Collect.XIDWindow > 0 {
		args = append(args, "--xid-window", o.Collect.XIDWindow.String())
	}
	for _, n := range o.Collect.NICs {
		args = append(args, "--nic", n.Name+"="+n.BusID)
	}
	if o.Mock != "" {
		args = append(args, "--mock", o.Mock)
	}
	for _, f := range o.Faults {
		s := fmt.Sprintf("%s:%d", f.Kind, f.GPU)
		if f.BusID != "" {
			s = string(f.Kind) + "@" + f.BusID
		}
		if f.Value != 0 {
			s += fmt.Sprintf(":%d", f.Value)
		}
		args = append(args, "--fault", s)
	}
	if o.SysRoot != "" {
		args = append(args, "--sys-root", o.SysRoot)
	}
	if o.DriverVersion != "" {
		args = append(args, "--driver-version", o.DriverVersion)
	}
	if o.Collect.Processes {
		args = append(args, "--processes", "true")
	}
	return args
}

// ParseAgentFlags reads the flags Args writes. The CLI can use it as the
// whole flag parsing of `gpuform agent nvml --json`, so controller and
// agent can never disagree on a flag.
func ParseAgentFlags(args []string) (AgentOptions, error) {
	var o AgentOptions
	for i := 0; i < len(args); i++ {
		name, val, inline := strings.Cut(args[i], "=")
		if !strings.HasPrefix(name, "--") {
			return o, fmt.Errorf("unexpected argument %q", args[i])
		}
		if !inline {
			if i+1 >= len(args) {
				return o, fmt.Errorf("%s needs a value", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "--xid-window":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return o, fmt.Errorf("--xid-window %q: want a duration such as 2s", val)
			}
			o.Collect.XIDWindow = d
		case "--nic":
			n, bus, ok := strings.Cut(val, "=")
			if !ok || n == "" {
				return o, fmt.Errorf("--nic %q: want NAME=PCI_ADDRESS", val)
			}
			addr, err := NormalizeBusID(bus)
			if err != nil {
				return o, fmt.Errorf("--nic %q: %w", val, err)
			}
			o.Collect.NICs = append(o.Collect.NICs, NIC{Name: n, BusID: addr})
		case "--mock":
			o.Mock = val
		case "--fault":
			f, err := ParseFault(val)
			if err != nil {
				return o, err
			}
			o.Faults = append(o.Faults, f)
		case "--sys-root":
			o.SysRoot = val
		case "--driver-version":
			o.DriverVersion = val
		case "--processes":
			b, err := strconv.ParseBool(val)
			if err != nil {
				return o, fmt.Errorf("--processes %q: want true or false", val)
			}
			o.Collect.Processes = b
		default:
			return o, fmt.Errorf("unknown flag %s", name)
		}
	}
	return o, nil
}
