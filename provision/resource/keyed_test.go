package resource

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// keyedNode is a node whose file at path holds content (as a probe reads
// it, byte for byte) and whose owner records are owners ("" for none).
func keyedNode(path, content, owners string) *facts.Node {
	f := debianNode()
	sum := sha256.Sum256([]byte(content))
	f.ConfigFiles = map[string]facts.ConfigFile{path: {Exists: true, Data: []byte(content), SHA256: hex.EncodeToString(sum[:]), Size: len(content), Mode: "-rw-r--r--", UID: "0", GID: "0"}}
	if path == NCCLConfFile {
		nf := facts.NewFile(content)
		f.NCCLConf = &nf
	} else {
		f.ManagedFiles = map[string]facts.File{path: facts.NewFile(content)}
	}
	if owners != "" {
		f.Owners = facts.ParseOwners([]byte(owners))
		if f.Owners.Error != "" {
			panic(f.Owners.Error)
		}
	}
	return f
}

// written returns the content the change writes to path, and whether it
// writes it.
func written(c Change, path string) (string, bool) {
	for _, st := range c.Steps {
		if strings.HasPrefix(st.Description, "write "+path) {
			return st.Input, true
		}
	}
	return "", false
}

const (
	hdrA = `# Managed by gpuform, spec "a". Change the spec, not this file.` + "\n"
	hdrB = `# Managed by gpuform, spec "b". Change the spec, not this file.` + "\n"
	// keysA records vm.swappiness under spec a.
	keysA = `{"format_version":"2","resources":{},"keys":{"sysctl":{"vm.swappiness":{"spec":"a"}}}}`
)

// TestSysctlSharedKeys: spec b's sysctl drop-in edits only b's keys; every
// key of another spec, or of nobody, keeps its bytes (issue 30 item 6).
func TestSysctlSharedKeys(t *testing.T) {
	tests := map[string]struct {
		file, owners, body string
		// noOwner plans with the zero Owner (a hand-built node).
		noOwner bool
		// want is the file written; "" when none is.
		want   string
		action Action
		// before and after are the attributes the plan shows.
		before, after map[string]string
	}{
		"adds its key next to another spec's": {
			file: hdrA + "vm.swappiness = 1\n", owners: keysA,
			body:   `sysctl = { "net.core.rmem_max" = "16777216" }`,
			want:   `# Managed by gpuform, specs "a" (key vm.swappiness), "b" (key net.core.rmem_max). Change the spec that sets a key, not this file.` + "\nvm.swappiness = 1\nnet.core.rmem_max = 16777216\n",
			action: Update, before: map[string]string{}, after: map[string]string{"net.core.rmem_max": "16777216"},
		},
		"keeps another spec's comments and spacing byte for byte": {
			file:   hdrA + "# tuned for RDMA\nvm.swappiness   =  1\n\n",
			owners: keysA,
			body:   `sysctl = { "net.core.rmem_max" = "16777216" }`,
			want:   `# Managed by gpuform, specs "a" (key vm.swappiness), "b" (key net.core.rmem_max). Change the spec that sets a key, not this file.` + "\n# tuned for RDMA\nvm.swappiness   =  1\n\nnet.core.rmem_max = 16777216\n",
			action: Update, before: map[string]string{}, after: map[string]string{"net.core.rmem_max": "16777216"},
		},
		"drops only its own key": {
			file:   `# Managed by gpuform, specs "a" (key vm.swappiness), "b" (key net.core.rmem_max). Change the spec that sets a key, not this file.` + "\nvm.swappiness = 1\nnet.core.rmem_max = 16777216\n",
			owners: `{"format_version":"2","resources":{},"keys":{"sysctl":{"vm.swappiness":{"spec":"a"},"net.core.rmem_max":{"spec":"b"}}}}`,
			want:   hdrA + "vm.swappiness = 1\n",
			action: Update, before: map[string]string{"net.core.rmem_max": "16777216"}, after: map[string]string{},
		},
		"a record of a gpuform before key records keeps the old spec's keys": {
			file:   hdrA + "vm.swappiness = 1\nvm.max_map_count = 262144\n",
			owners: `{"format_version":"1","resources":{"sysctl":{"spec":"a"}}}`,
			body:   `sysctl = { "net.core.rmem_max" = "16777216" }`,
			want:   `# Managed by gpuform, specs "a" (keys vm.max_map_count, vm.swappiness), "b" (key net.core.rmem_max). Change the spec that sets a key, not this file.` + "\nvm.swappiness = 1\nvm.max_map_count = 262144\nnet.core.rmem_max = 16777216\n",
			action: Update, before: map[string]string{}, after: map[string]string{"net.core.rmem_max": "16777216"},
		},
		"a key nobody recorded stays": {
			file: managedHeader + "kernel.numa_balancing = 0\n",
			body: `sysctl = { "vm.swappiness" = "1" }`,
			want: hdrB + "kernel.numa_balancing = 0\nvm.swappiness = 1\n", action: Update,
			before: map[string]string{}, after: map[string]string{"vm.swappiness": "1"},
		},
		"a file of its own keys only is written whole, sorted": {
			file:   hdrB + "vm.swappiness = 1\n",
			owners: `{"format_version":"2","resources":{},"keys":{"sysctl":{"vm.swappiness":{"spec":"b"}}}}`,
			body:   `sysctl = { "vm.swappiness" = "1", "net.core.rmem_max" = "16777216" }`,
			want:   hdrB + "net.core.rmem_max = 16777216\nvm.swappiness = 1\n", action: Update,
			before: map[string]string{"vm.swappiness": "1"}, after: map[string]string{"vm.swappiness": "1", "net.core.rmem_max": "16777216"},
		},
		"its last key goes with the file": {
			file:   hdrB + "vm.swappiness = 1\n",
			owners: `{"format_version":"2","resources":{},"keys":{"sysctl":{"vm.swappiness":{"spec":"b"}}}}`,
			action: Delete, before: map[string]string{"vm.swappiness": "1"},
		},
		"nothing of its own: no change": {
			file: hdrA + "vm.swappiness = 1\n", owners: keysA,
			action: NoOp,
		},
		"a node without an owner writes the whole file": {
			file: hdrA + "vm.swappiness = 1\n", owners: keysA, noOwner: true,
			body:   `sysctl = { "net.core.rmem_max" = "16777216" }`,
			want:   managedHeader + "net.core.rmem_max = 16777216\n",
			action: Update, before: map[string]string{"vm.swappiness": "1"}, after: map[string]string{"net.core.rmem_max": "16777216"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := loadNode(t, tc.body)
			if !tc.noOwner {
				n.Owner = spec.Owner{Spec: "b"}
			}
			f := keyedNode(SysctlFile, tc.file, tc.owners)
			r, err := sysctlResource(n, f)
			must(t, err)
			c, err := r.Diff(f)
			must(t, err)
			got, ok := written(c, SysctlFile)
			if tc.want == "" && ok || tc.want != "" && got != tc.want {
				t.Errorf("writes (%v):\n%s\nwant:\n%s", ok, got, tc.want)
			}
			if c.Action != tc.action {
				t.Errorf("action %v, want %v", c.Action, tc.action)
			}
			if !sameAttrs(c.Before, stringVals(tc.before)) || !sameAttrs(c.After, stringVals(tc.after)) {
				t.Errorf("before %v after %v, want %v -> %v", c.Before, c.After, tc.before, tc.after)
			}
			if !tc.noOwner && tc.action != NoOp && c.Keys == nil {
				t.Error("the change does not say its keys")
			}
		})
	}
}

// sameAttrs compares attribute maps, nil apart from empty.
func sameAttrs(a, b Values) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestSysctlSharedDropInReadWhole: an edit that would start from bytes
// other than those the keys were read from is refused, not guessed at
// (another spec's lines would be lost).
func TestSysctlSharedDropInReadWhole(t *testing.T) {
	f := keyedNode(SysctlFile, hdrA+"vm.swappiness = 1\n", keysA)
	f.ConfigFiles = nil
	n := loadNode(t, `sysctl = { "net.core.rmem_max" = "16777216" }`)
	n.Owner = spec.Owner{Spec: "b"}
	r, err := sysctlResource(n, f)
	must(t, err)
	if _, err := r.Diff(f); err == nil || !strings.Contains(err.Error(), "not read byte for byte") {
		t.Fatalf("Diff: %v, want a refusal", err)
	}
}

// TestNCCLConfSharedKeys: a spec edits only its keys of /etc/nccl.conf;
// the other spec's keys and the operator's lines keep their bytes.
func TestNCCLConfSharedKeys(t *testing.T) {
	const hca = "NCCL_IB_HCA=mlx5_0,mlx5_1\n"
	tests := map[string]struct {
		file, owners, body, want string
	}{
		"adds its key next to another spec's and the operator's": {
			file:   `# Managed by gpuform, spec "a" (the keys NCCL_IB_HCA; other lines are left as they are). Change the spec, not this file.` + "\nNCCL_DEBUG=WARN\n" + hca,
			owners: `{"format_version":"2","resources":{},"keys":{"nccl_conf":{"NCCL_IB_HCA":{"spec":"a"}}}}`,
			body:   "affinity {\n nccl_env = true\n nccl_socket_ifname = \"^docker,lo\"\n}",
			want:   `# Managed by gpuform, specs "a" (key NCCL_IB_HCA), "b" (key NCCL_SOCKET_IFNAME); other lines are left as they are. Change the spec that sets a key, not this file.` + "\nNCCL_DEBUG=WARN\n" + hca + "NCCL_SOCKET_IFNAME=^docker,lo\n",
		},
		"drops its key, keeps the other spec's": {
			file:   `# Managed by gpuform, specs "a" (key NCCL_IB_HCA), "b" (key NCCL_SOCKET_IFNAME); other lines are left as they are. Change the spec that sets a key, not this file.` + "\nNCCL_DEBUG=WARN\n" + hca + "NCCL_SOCKET_IFNAME=^docker,lo\n",
			owners: `{"format_version":"2","resources":{},"keys":{"nccl_conf":{"NCCL_IB_HCA":{"spec":"a"},"NCCL_SOCKET_IFNAME":{"spec":"b"}}}}`,
			want:   `# Managed by gpuform, spec "a" (the keys NCCL_IB_HCA; other lines are left as they are). Change the spec, not this file.` + "\nNCCL_DEBUG=WARN\n" + hca,
		},
		// A gpuform before key records recorded nccl_conf as a whole: the
		// keys it stands for may be the operator's, so none is removed.
		"an old record of the whole file removes none of its keys": {
			file:   "NCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME=eth0\n",
			owners: `{"format_version":"1","resources":{"nccl_conf":{"spec":"b"}}}`,
			body:   "affinity {\n nccl_env = true\n nccl_ib_hca = [\"mlx5_0\"]\n}",
			want:   `# Managed by gpuform, spec "b" (the keys NCCL_IB_HCA; other lines are left as they are). Change the spec, not this file.` + "\nNCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME=eth0\nNCCL_IB_HCA=mlx5_0\n",
		},
		"drops its last key: the header goes, the operator's lines stay": {
			file:   `# Managed by gpuform, spec "b" (the keys NCCL_SOCKET_IFNAME; other lines are left as they are). Change the spec, not this file.` + "\nNCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME=^docker,lo\n",
			owners: `{"format_version":"2","resources":{},"keys":{"nccl_conf":{"NCCL_SOCKET_IFNAME":{"spec":"b"}}}}`,
			want:   "NCCL_DEBUG=WARN\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := loadNode(t, tc.body)
			n.Owner = spec.Owner{Spec: "b"}
			f := keyedNode(NCCLConfFile, tc.file, tc.owners)
			r, err := ncclConf(n, f)
			must(t, err)
			if r == nil {
				t.Fatal("nccl_conf not planned")
			}
			c, err := r.Diff(f)
			must(t, err)
			if got, _ := written(c, NCCLConfFile); got != tc.want {
				t.Errorf("writes:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestLimitsSharedKeys: a spec's pam_limits file edits only the items it
// declares; another spec's items keep their lines byte for byte.
func TestLimitsSharedKeys(t *testing.T) {
	const memlockA = "* soft memlock unlimited\n*   hard   memlock   unlimited\n"
	tests := map[string]struct {
		file, owners, body, want string
		action                   Action
		before, after            map[string]string
	}{
		"adds its item next to another spec's": {
			file:   hdrA + memlockA,
			owners: `{"format_version":"2","resources":{},"keys":{"limits":{"memlock":{"spec":"a"}}}}`,
			body:   "container {\n runtime = \"docker\"\n ulimits = { nofile = \"1048576\" }\n}",
			want:   `# Managed by gpuform, specs "a" (key memlock), "b" (key nofile). Change the spec that sets a key, not this file.` + "\n" + memlockA + "* soft nofile 1048576\n* hard nofile 1048576\n",
			action: Update, before: map[string]string{}, after: map[string]string{"nofile": "1048576"},
		},
		"drops its item, keeps the other spec's": {
			file:   `# Managed by gpuform, specs "a" (key memlock), "b" (key nofile). Change the spec that sets a key, not this file.` + "\n" + memlockA + "* soft nofile 1048576\n* hard nofile 1048576\n",
			owners: `{"format_version":"2","resources":{},"keys":{"limits":{"memlock":{"spec":"a"},"nofile":{"spec":"b"}}}}`,
			want:   hdrA + memlockA,
			action: Update, before: map[string]string{"nofile": "1048576"}, after: map[string]string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := loadNode(t, tc.body)
			n.Owner = spec.Owner{Spec: "b"}
			f := keyedNode(LimitsFile, tc.file, tc.owners)
			for _, line := range strings.Split(tc.file, "\n") {
				if fl := strings.Fields(line); len(fl) == 4 && fl[0] == "*" {
					f.Limits = append(f.Limits, facts.LimitEntry{File: LimitsFile, Domain: "*", Type: fl[1], Item: fl[2], Value: fl[3]})
				}
			}
			c, err := limitsResource(n, f).Diff(f)
			must(t, err)
			if got, _ := written(c, LimitsFile); got != tc.want {
				t.Errorf("writes:\n%s\nwant:\n%s", got, tc.want)
			}
			if c.Action != tc.action || !sameAttrs(c.Before, stringVals(tc.before)) || !sameAttrs(c.After, stringVals(tc.after)) {
				t.Errorf("%v %v -> %v, want %v %v -> %v", c.Action, c.Before, c.After, tc.action, tc.before, tc.after)
			}
		})
	}
}

// TestEditKeyedLines: only the lines of the keys set or dropped change.
func TestEditKeyedLines(t *testing.T) {
	tests := map[string]struct {
		cur, want string
		order     []string
		set       map[string]string
		drop      []string
	}{
		"replaces in place, keeps the rest":                           {"# c\n* soft a 1\nx y z w\n* hard a 1\n", "# c\n* soft a 2\n* hard a 2\nx y z w\n", []string{"a"}, map[string]string{"a": "* soft a 2\n* hard a 2\n"}, nil},
		"appends a new key":                                           {"* soft b 1\n", "* soft b 1\n* soft a 2\n", []string{"a"}, map[string]string{"a": "* soft a 2\n"}, nil},
		"keeps a last line without newline":                           {"* soft a 1\n* soft b 1", "* soft b 1", nil, nil, []string{"a"}},
		"a key after a last line without newline starts its own line": {"* soft b 1", "* soft b 1\n* soft a 2\n", []string{"a"}, map[string]string{"a": "* soft a 2\n"}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := editKeyedLines([]byte(tc.cur), limitsItem, tc.order, tc.set, tc.drop); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDockerDaemonSharedKeys: a spec sets and removes only its own keys of
// daemon.json; another spec's keys and the operator's stay.
func TestDockerDaemonSharedKeys(t *testing.T) {
	const runtimeA = `"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}`
	tests := map[string]struct {
		daemon, owners, body string
		// want are the keys of the daemon.json written, with what they
		// hold; nil when nothing is planned.
		want     map[string]string
		declared []string
	}{
		"adds its key next to another spec's and the operator's": {
			daemon:   `{"log-driver": "journald", ` + runtimeA + `}`,
			owners:   `{"format_version":"2","resources":{},"keys":{"docker_daemon":{"runtimes.nvidia":{"spec":"a"}}}}`,
			body:     "container {\n runtime = \"docker\"\n default_shm_size = \"16GiB\"\n}",
			want:     map[string]string{"log-driver": `"journald"`, "runtimes": `{"nvidia":{"args":[],"path":"nvidia-container-runtime"}}`, "default-shm-size": `"16G"`},
			declared: []string{"default-shm-size"},
		},
		"removes its key, keeps the other spec's and the operator's": {
			daemon: `{"log-driver": "journald", "default-shm-size": "16G", ` + runtimeA + `}`,
			owners: `{"format_version":"2","resources":{},"keys":{"docker_daemon":{"runtimes.nvidia":{"spec":"a"},"default-shm-size":{"spec":"b"}}}}`,
			want:   map[string]string{"log-driver": `"journald"`, "runtimes": `{"nvidia":{"args":[],"path":"nvidia-container-runtime"}}`},
		},
		// A whole-resource record of docker_daemon may stand for keys the
		// operator set: none is removed on its word.
		"an old record of the whole file removes nothing": {
			daemon: `{"default-shm-size": "16G", ` + runtimeA + `}`,
			owners: `{"format_version":"1","resources":{"docker_daemon":{"spec":"b"}}}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := loadNode(t, tc.body)
			n.Owner = spec.Owner{Spec: "b"}
			f := keyedNode(DaemonJSON, tc.daemon, tc.owners)
			var d map[string]any
			dec := json.NewDecoder(strings.NewReader(tc.daemon))
			dec.UseNumber()
			must(t, dec.Decode(&d))
			f.Docker = facts.Docker{Present: true, Daemon: d, Raw: tc.daemon}
			rs, _, err := buildDockerDaemon(&buildInput{n: n, f: f, family: FamilyDebian})
			must(t, err)
			if tc.want == nil {
				if len(rs) != 0 {
					t.Fatalf("planned %v, want nothing", rs)
				}
				return
			}
			if len(rs) != 1 {
				t.Fatalf("planned %d resources, want docker_daemon", len(rs))
			}
			c, err := rs[0].Diff(f)
			must(t, err)
			text, ok := written(c, DaemonJSON)
			if !ok {
				t.Fatalf("daemon.json not written: %+v", c)
			}
			var got map[string]json.RawMessage
			must(t, json.Unmarshal([]byte(text), &got))
			if len(got) != len(tc.want) {
				t.Errorf("daemon.json written:\n%s\nwant the keys %v", text, tc.want)
			}
			for k, v := range tc.want {
				var compact bytes.Buffer
				if err := json.Compact(&compact, got[k]); err != nil || compact.String() != v {
					t.Errorf("%s = %s, want %s", k, compact.String(), v)
				}
			}
			if c.Keys == nil || !slices.Equal(c.Keys.Declared, tc.declared) {
				t.Errorf("change's keys %+v, want declared %v", c.Keys, tc.declared)
			}
		})
	}
}

// TestKeyedChangesSayTheirKeys: every keyed resource that a spec with an
// owner plans says its keys, so that ownership is recorded per key and
// never as a whole-resource record (plan's own relies on it).
func TestKeyedChangesSayTheirKeys(t *testing.T) {
	n := loadNode(t, `sysctl = { "vm.swappiness" = "1" }
  kernel_args = ["iommu=pt"]
  affinity {
    nccl_env           = true
    nccl_socket_ifname = "^docker,lo"
  }
  container {
    runtime          = "docker"
    default_shm_size = "16GiB"
    ulimits          = { memlock = "unlimited" }
  }`)
	n.Owner = spec.Owner{Spec: "b"}
	f := debianNode()
	f.Docker = facts.Docker{Present: true, Daemon: map[string]any{}, Raw: "{}"}
	changes, _ := diffAll(t, n, f)
	seen := 0
	for name, c := range changes {
		if !IsKeyed(name) {
			continue
		}
		seen++
		if c.Keys == nil || len(c.Keys.Declared) == 0 {
			t.Errorf("%s: change says no keys: %+v", name, c.Keys)
		}
	}
	if seen != 5 {
		t.Errorf("%d keyed resources planned, want sysctl, limits, kernel_cmdline, nccl_conf and docker_daemon: %v", seen, changes)
	}
}

// TestKernelCmdlineSharedKeys: a spec's kernel arguments are one run where
// its first one was; another spec's arguments, and nobody's, keep their
// place, and on RHEL grubby removes only the spec's own.
func TestKernelCmdlineSharedKeys(t *testing.T) {
	line := func(args string) string { return `GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX ` + args + `"` + "\n" }
	tests := map[string]struct {
		file, owners, body, family string
		want                       string
		then                       []string
		before, after              map[string]string
	}{
		"adds its arguments after another spec's": {
			file:   hdrA + line("iommu=pt"),
			owners: `{"format_version":"2","resources":{},"keys":{"kernel_cmdline":{"iommu":{"spec":"a"}}}}`,
			body:   `kernel_args = ["isolcpus=2-7"]`,
			want:   `# Managed by gpuform, specs "a" (key iommu), "b" (key isolcpus). Change the spec that sets a key, not this file.` + "\n" + line("iommu=pt isolcpus=2-7"),
			before: map[string]string{"args": ""}, after: map[string]string{"args": "isolcpus=2-7"},
		},
		"its run stays in place and in order": {
			file:   `# Managed by gpuform, specs "a" (key iommu), "b" (keys default_hugepagesz, hugepages, hugepagesz). Change the spec that sets a key, not this file.` + "\n" + line("default_hugepagesz=1G hugepagesz=1G hugepages=8 iommu=pt"),
			owners: `{"format_version":"2","resources":{},"keys":{"kernel_cmdline":{"iommu":{"spec":"a"},"default_hugepagesz":{"spec":"b"},"hugepagesz":{"spec":"b"},"hugepages":{"spec":"b"}}}}`,
			body:   "hugepages {\n size = \"1GiB\"\n count = 16\n}",
			want:   `# Managed by gpuform, specs "a" (key iommu), "b" (keys default_hugepagesz, hugepages, hugepagesz). Change the spec that sets a key, not this file.` + "\n" + line("default_hugepagesz=1G hugepagesz=1G hugepages=16 iommu=pt"),
			before: map[string]string{"args": "default_hugepagesz=1G hugepagesz=1G hugepages=8"}, after: map[string]string{"args": "default_hugepagesz=1G hugepagesz=1G hugepages=16"},
		},
		"on RHEL grubby removes only its own": {
			file:   `# Managed by gpuform, specs "a" (key iommu), "b" (key isolcpus). Change the spec that sets a key, not this file.` + "\n" + line("iommu=pt isolcpus=2-7"),
			owners: `{"format_version":"2","resources":{},"keys":{"kernel_cmdline":{"iommu":{"spec":"a"},"isolcpus":{"spec":"b"}}}}`,
			family: FamilyRHEL,
			want:   hdrA + line("iommu=pt"),
			then:   []string{"grubby", "isolcpus=2-7", ""},
			before: map[string]string{"args": "isolcpus=2-7"}, after: map[string]string{"args": ""},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := loadNode(t, tc.body)
			n.Owner = spec.Owner{Spec: "b"}
			f := keyedNode(GrubDropIn, tc.file, tc.owners)
			family := tc.family
			if family == "" {
				family = FamilyDebian
			}
			r, err := kernelCmdline(n, f, family, hugepagesBootArgs(n))
			must(t, err)
			c, err := r.Diff(f)
			must(t, err)
			if got, _ := written(c, GrubDropIn); got != tc.want {
				t.Errorf("writes:\n%s\nwant:\n%s", got, tc.want)
			}
			// file_write.sh's arguments after its ten fixed ones are the
			// effect that puts the file into effect.
			if a := callOf(t, c.Steps[0]).Args; tc.then != nil && (len(a) <= fileWriteArgs || !slices.Equal(a[fileWriteArgs:], tc.then)) {
				t.Errorf("step does not run %q: %s", tc.then, callOf(t, c.Steps[0]))
			}
			if !sameAttrs(c.Before, stringVals(tc.before)) || !sameAttrs(c.After, stringVals(tc.after)) {
				t.Errorf("%v -> %v, want %v -> %v", c.Before, c.After, tc.before, tc.after)
			}
		})
	}
}
