package facts

import (
	"errors"
	"fmt"
	"strings"
)

// BMCCommand is the cmd record of the ipmitool mc info read.
const BMCCommand = "ipmitool-mc-info"

// ParseMCInfo returns the "Firmware Revision" of ipmitool mc info's
// output (or bmc info's, the same text), as printed: "3.10". It is an
// error when the line is missing or empty.
func ParseMCInfo(out string) (string, error) {
	for line := range strings.SplitSeq(out, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(key) != "Firmware Revision" {
			continue
		}
		v := strings.TrimSpace(value)
		if v == "" || strings.ContainsAny(v, " \t") {
			return "", fmt.Errorf("unreadable Firmware Revision %q", v)
		}
		return v, nil
	}
	return "", errors.New("no Firmware Revision line")
}

// bmc reads the probe's ipmitool mc info record; no record (no ipmitool
// or no /dev/ipmi0) leaves BMC nil: not read.
func (p *interpreter) bmc() {
	c, ok := p.raw.cmds[BMCCommand]
	if !ok {
		return
	}
	switch {
	case c.rc == 124:
		p.n.BMC = &BMC{Error: "ipmitool mc info did not answer within 10 s (timeout)"}
	case c.rc != 0:
		p.n.BMC = &BMC{Error: fmt.Sprintf("ipmitool mc info exited %d: %s", c.rc, firstLineOf(c.out))}
	default:
		v, err := ParseMCInfo(c.out)
		if err != nil {
			p.n.BMC = &BMC{Error: "ipmitool mc info: " + err.Error()}
			return
		}
		p.n.BMC = &BMC{Firmware: v}
	}
}
