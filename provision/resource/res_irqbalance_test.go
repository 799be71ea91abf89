package resource

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nicirq"
)

// TestIRQBalance: gpuform's --policyscript joins the operator's
// IRQBALANCE_ARGS and leaves again, every other byte of the file kept.
func TestIRQBalance(t *testing.T) {
	const on = "affinity {\n  nic_irq_affinity = true\n}"
	const off = "affinity {\n  nic_irq_affinity = false\n}"
	pol := "--policyscript=" + nicirq.File
	for _, tc := range []struct {
		name, body, file string
		// want is the file after apply; "" means nothing is planned.
		want, err string
	}{
		{name: "appended", body: on, file: "# x\nENABLED=1",
			want: "# x\nENABLED=1\nIRQBALANCE_ARGS=" + pol + "\n"},
		{name: "operator's arguments kept", body: on, file: "IRQBALANCE_ARGS=\"--hintpolicy=ignore  -t 5\"\n#IRQBALANCE_ONESHOT=\n",
			want: "IRQBALANCE_ARGS=\"--hintpolicy=ignore -t 5 " + pol + "\"\n#IRQBALANCE_ONESHOT=\n"},
		{name: "already there", body: on, file: "IRQBALANCE_ARGS=" + pol + "\n"},
		// irqbalance takes one policy script: merging two is the operator's call.
		{name: "operator's own policy script", body: on, file: "IRQBALANCE_ARGS=\"-l /usr/local/bin/mine\"\n", err: "already sets a policy script"},
		{name: "taken out", body: off, file: "A=1\nIRQBALANCE_ARGS=\"--hintpolicy=ignore " + pol + "\"\n",
			want: "A=1\nIRQBALANCE_ARGS=\"--hintpolicy=ignore\"\n"},
		{name: "line gpuform added goes", body: off, file: "A=1\nIRQBALANCE_ARGS=" + pol + "\n", want: "A=1\n"},
		{name: "off and never on", body: off, file: "IRQBALANCE_ARGS=\"-l /usr/local/bin/mine\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, f := loadNode(t, tc.body), debianNode()
			f.ConfigFiles = map[string]facts.ConfigFile{"/etc/default/irqbalance": {Exists: true, Data: []byte(tc.file),
				SHA256: facts.NewFile(tc.file).SHA256, Mode: "-rw-r--r--", UID: "0", GID: "0"}}
			rs, _, err := buildIRQBalance(newBuildInput(testKB, n, f))
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 {
				if tc.want != "" || tc.err != "" {
					t.Fatalf("nothing planned")
				}
				return
			}
			c, err := rs[0].Diff(f)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if c.Action != NoOp {
					t.Fatalf("want no change: %+v", c)
				}
				return
			}
			if c.Action != Update || len(c.Steps) != 1 || c.Steps[0].Input != tc.want {
				t.Fatalf("change %s, steps %d, file:\n%q\nwant\n%q", c.Action, len(c.Steps), input(c), tc.want)
			}
			if call := callOf(t, c.Steps[0]); call.Name != "file_write.sh" || !slices.Equal(call.Args[fileWriteArgs:], []string{"try-restart", "irqbalance.service"}) {
				t.Errorf("irqbalance not restarted with the change: %s", call)
			}
		})
	}
}

func input(c Change) string {
	if len(c.Steps) == 0 {
		return ""
	}
	return c.Steps[0].Input
}
