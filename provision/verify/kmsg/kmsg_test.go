package kmsg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

// The Xid line formats are from public captures: "NVRM: Xid (PCI:0000:44:00):
// 79, GPU has fallen off the bus" (https://github.com/NVIDIA/NVSentinel/issues/155),
// the pid='<unknown>', name=<unknown> form and the address without "PCI:"
// (quoted in https://github.com/leptonai/gpud's Xid reader). The SXid line
// is modelled on the same pattern; no capture was read.
func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{
			name: "iso time, pid and name",
			in:   "2026-11-30T14:04:33,112372+00:00 NVRM: Xid (PCI:0000:9d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
			want: []Event{{Kind: KindXid, Code: 79, PCI: "0000:9d:00", Time: time.Date(2026, 11, 30, 14, 4, 33, 0, time.UTC),
				Line: "2026-11-30T14:04:33,112372+00:00 NVRM: Xid (PCI:0000:9d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."}},
		},
		{
			// Seconds since boot: no absolute time.
			name: "boot-relative time, no PCI prefix",
			in:   "[ 1843.308145] NVRM: Xid (0000:af:00): 48, pid='<unknown>', name=<unknown>, Ch 00000008\n[ 1843.4] NVRM: loading NVIDIA UNIX\n",
			want: []Event{{Kind: KindXid, Code: 48, PCI: "0000:af:00", Line: "[ 1843.308145] NVRM: Xid (0000:af:00): 48, pid='<unknown>', name=<unknown>, Ch 00000008"}},
		},
		{
			name: "sxid",
			in:   "[  100.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)\n",
			want: []Event{{Kind: KindSXid, Code: 12028, PCI: "0000:07:00.0", Line: "[  100.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)"}},
		},
		{
			// NVLink5 Xids name a subcode, a severity and registers. The
			// first line is as quoted from NVIDIA/TensorRT-LLM#4816 (no
			// registers); the second follows the format NVIDIA's Xid
			// catalogue gives ("<Xid> <sub component> <fatal vs nonfatal>
			// <Crosscontain> <injected> <link> (<intrInfo> <errorStatus> …)").
			name: "nvlink5 subcode",
			in:   "NVRM: Xid (PCI:0000:5f:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 02\nNVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n",
			want: []Event{
				{Kind: KindXid, Code: 145, PCI: "0000:5f:00", Subcode: "RLW_REMAP", Severity: "Nonfatal", Line: "NVRM: Xid (PCI:0000:5f:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 02"},
				{Kind: KindXid, Code: 149, PCI: "0018:01:00", Subcode: "NETIR_LINK_EVT", Severity: "Fatal", ErrorStatus: "0x00000000", Line: "NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"},
			},
		},
		{
			// The multi-line "fallen off the bus" notice without an Xid is not an Xid.
			name: "no xid",
			in:   "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n               NVRM: fallen off the bus and is not responding to commands.\n",
			want: []Event{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(tc.in)
			if diff := cmp.Diff(tc.want, got.Events); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("[ 1.0] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n")
	f.Fuzz(func(t *testing.T, s string) { Parse(s) })
}

// TestXidLinesScript checks scripts/xid_lines.sh with shellcheck, as it is
// and as sent, and runs it under dash, bash and busybox ash with a
// stand-in dmesg first on PATH: the Xid and SXid lines of --time-format
// iso's output, plain dmesg's when that option fails, and exit 3 with
// dmesg's words when both fail.
func TestXidLinesScript(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{
		"xid_lines.sh":      script,
		"sent/xid_lines.sh": nodesh.Script(script, nil),
	})
	const xid = "2026-12-01T10:00:00,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."
	const sxid = "[ 12.5] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal"
	for name, tc := range map[string]struct {
		standIn, out, errOut string
		exit                 int
	}{
		"iso times": {standIn: `[ "$1" = --time-format ] || exit 9; echo "` + xid + `"; echo "2026-12-01T10:00:01,000000+00:00 usb 1-1: new device"`, out: xid + "\n"},
		"plain":     {standIn: `[ "$1" = --time-format ] && exit 1; echo "` + sxid + `"; echo "[ 13.0] eth0: link up"`, out: sxid + "\n"},
		"unreadable": {standIn: `echo "dmesg: read kernel buffer failed: Operation not permitted"; exit 1`, exit: 3,
			errOut: "dmesg: read kernel buffer failed: Operation not permitted\n"},
	} {
		bin := t.TempDir()
		if err := os.WriteFile(filepath.Join(bin, "dmesg"), []byte("#!/bin/sh\n"+tc.standIn+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, sh := range nodeshtest.Shells() {
			t.Run(sh.Name+"/"+name, func(t *testing.T) {
				cmd := nodeshtest.Command(t, sh, nodesh.Script(script, nil))
				cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				_ = cmd.Run()
				if code := cmd.ProcessState.ExitCode(); code != tc.exit || stdout.String() != tc.out || stderr.String() != tc.errOut {
					t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tc.exit, tc.out, tc.errOut)
				}
			})
		}
	}
}

// From keeps what a job left behind: events logged at or after the job's
// start, and those dmesg printed without a time (they may be the job's).
// An unreadable log stays unreadable.
func TestLogFrom(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	lg := Parse("2026-12-02T04:59:59,999999+00:00 NVRM: Xid (PCI:0000:9d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n" +
		"2026-12-02T05:00:00,000001+00:00 NVRM: Xid (PCI:0000:18:00): 13, pid=4711, name=python, Graphics Exception\n" +
		"[ 4711.000000] NVRM: Xid (PCI:0000:2a:00): 31, pid=4711, name=python, Ch 00000010\n")
	got := lg.From(start)
	var codes []uint64
	for _, e := range got.Events {
		codes = append(codes, e.Code)
	}
	if d := cmp.Diff([]uint64{13, 31}, codes); d != "" || !got.Since.Equal(start) {
		t.Errorf("From(%s): since %s, codes (-want +got):\n%s", start, got.Since, d)
	}
	if u := (Log{Unreadable: "dmesg: read kernel buffer failed"}).From(start); u.Unreadable == "" || len(u.Events) != 0 {
		t.Errorf("an unreadable log became %+v", u)
	}
}
