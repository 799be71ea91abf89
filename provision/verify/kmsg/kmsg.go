// Package kmsg reads the NVIDIA driver's Xid and NVSwitch SXid reports
// from a node's kernel log (dmesg): the history NVML's event API cannot
// give, since NVML reports only Xids raised while a program listens. A GPU
// that fell off the bus (Xid 79) is found here, not by listening.
//
// It does not judge what an Xid means or needs: the remediation catalogue
// in kb and the verify checks do.
package kmsg

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

// Kind says which report a line is.
type Kind string

// Kinds of reports.
const (
	// KindXid is a GPU Xid ("NVRM: Xid (PCI:0000:9d:00): 79, …").
	KindXid Kind = "xid"
	// KindSXid is an NVSwitch SXid ("nvidia-nvswitch2: SXid
	// (PCI:0000:07:00.0): 12028, …").
	KindSXid Kind = "sxid"
)

// Event is one Xid or SXid line of the kernel log.
type Event struct {
	// Kind is xid or sxid.
	Kind Kind `json:"kind"`
	// Code is the Xid or SXid number.
	Code uint64 `json:"code"`
	// PCI is the device's bus address as the driver prints it
	// ("0000:9d:00").
	PCI string `json:"pci"`
	// Time is when the kernel logged it; zero when dmesg printed only
	// seconds since boot.
	Time time.Time `json:"time,omitzero"`
	// Line is the log line as printed, the key that tells a new event from
	// one read before.
	Line string `json:"line"`
	// Subcode is the NVLink5 unit an Xid 144-150 names ("RLW_REMAP"); ""
	// for other Xids. NVIDIA's catalogue gives these Xids' action per
	// subcode and error status.
	Subcode string `json:"subcode,omitempty"`
	// Severity is the line's own word for an Xid 144-150: "Fatal" or
	// "Nonfatal".
	Severity string `json:"severity,omitempty"`
	// ErrorStatus is the second register in the parentheses of an Xid
	// 144-150 line ("0x00000001"), the catalogue's "Error Status".
	ErrorStatus string `json:"error_status,omitempty"`
}

// Log is what was read from a node's kernel log.
type Log struct {
	// Events are the Xid and SXid lines in log order.
	Events []Event `json:"events"`
	// Unreadable says why the log could not be read ("" when it was):
	// dmesg missing, or refused to an unprivileged user
	// (kernel.dmesg_restrict).
	Unreadable string `json:"unreadable,omitempty"`
	// Since, when set, is the time the events were kept from (Log.From):
	// the start of the job an epilog gate judges. Zero means since boot.
	Since time.Time `json:"-"`
}

// From keeps the events logged at t or later: the Xids a job left
// behind, for an epilog that judges only its own job. An event whose time
// dmesg did not print is kept, since it may be the job's: a gate fails
// closed.
func (l Log) From(t time.Time) Log {
	out := Log{Unreadable: l.Unreadable, Since: t, Events: []Event{}}
	for _, e := range l.Events {
		if e.Time.IsZero() || !e.Time.Before(t) {
			out.Events = append(out.Events, e)
		}
	}
	return out
}

// script prints the kernel ring buffer's Xid and SXid lines, with
// absolute times where dmesg can (scripts/xid_lines.sh).
//
//go:embed scripts/xid_lines.sh
var script string

// Read reads the Xid and SXid lines of the kernel log over t. An
// unreadable log is not an error: Log.Unreadable says why.
func Read(ctx context.Context, t transport.Transport) (Log, error) {
	res, err := t.Run(ctx, transport.Command{Script: nodesh.Script(script, nil)})
	if err != nil {
		return Log{}, err
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(transport.HostText(string(res.Stderr)))
		if msg == "" {
			msg = fmt.Sprintf("dmesg exited %d", res.ExitCode)
		}
		return Log{Unreadable: msg}, nil
	}
	return Parse(string(res.Stdout)), nil
}

var (
	// Xid lines as the driver prints them; seen in the wild with and
	// without "PCI:" and with a colon after the address.
	xidRe  = lazyre.New(`NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\):? (\d+),`)
	sxidRe = lazyre.New(`SXid \((?:PCI:)?([0-9a-fA-F:.]+)\):? (\d+),`)
	// isoStamp is util-linux's --time-format iso prefix.
	// nvlink5Re reads what follows the code of an Xid 144-150, in the
	// format NVIDIA's catalogue gives: "<subcode> <Fatal|Nonfatal> <XC>
	// <injected> Link <n> (<intrInfo> <errorStatus> …)".
	nvlink5Re = lazyre.New(`^\s*([A-Z][A-Z0-9_]*(?:/[A-Z][A-Z0-9_]*)?),?\s+(Fatal|Nonfatal)\b[^(]*(?:\((0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+))?`)
	isoStamp  = lazyre.New(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)[,.](\d+)([+-]\d\d:?\d\d)\s`)
)

// Parse reads dmesg output (any time format) and returns its Xid and SXid
// events. Lines it does not recognise are ignored.
func Parse(out string) Log {
	lg := Log{Events: []Event{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		kind, m := KindXid, xidRe.FindStringSubmatch(line)
		if m == nil {
			kind, m = KindSXid, sxidRe.FindStringSubmatch(line)
		}
		if m == nil {
			continue
		}
		code, err := strconv.ParseUint(m[2], 10, 32)
		if err != nil {
			continue
		}
		ev := Event{Kind: kind, Code: code, PCI: strings.ToLower(m[1]), Line: line}
		if kind == KindXid && code >= 144 && code <= 150 {
			rest := line[strings.Index(line, m[0])+len(m[0]):]
			if n := nvlink5Re.FindStringSubmatch(rest); n != nil {
				ev.Subcode, ev.Severity, ev.ErrorStatus = n[1], n[2], strings.ToLower(n[4])
			}
		}
		if s := isoStamp.FindStringSubmatch(line); s != nil {
			zone := strings.Replace(s[3], ":", "", 1)
			if t, err := time.Parse("2006-01-02T15:04:05-0700", s[1]+zone); err == nil {
				ev.Time = t
			}
		}
		lg.Events = append(lg.Events, ev)
	}
	return lg
}
