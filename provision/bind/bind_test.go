package bind_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// profileSpec uses a built-in hardware profile the way the examples do:
// its numa_binds as bind blocks and its gpu_nic, where it has one.
const profileSpec = `
module "hw" {
  source = "gpuform/%s"
}
node "n" {
  hosts    = ["gpu001"]
  hardware = module.hw.hardware
  numa {
    dynamic "bind" {
      for_each = module.hw.numa_binds
      content {
        gpus = bind.value.gpus
        node = bind.value.node
      }
    }
  }
  affinity {
    gpu_nic = try(module.hw.gpu_nic, {})
  }
}
`

func loadProfile(t *testing.T, profile string) *spec.Node {
	t.Helper()
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": fmt.Appendf(nil, profileSpec, profile)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return cfg.Nodes[0]
}

// nodeFacts is a host with numa NUMA nodes, node k owning CPUs
// 100k..100k+9 and 1000+100k..1000+100k+9 (two hyperthread ranges), so a
// GPU given the wrong node's CPUs shows.
func nodeFacts(numa int) *facts.Node {
	f := &facts.Node{}
	for k := range numa {
		f.NUMA = append(f.NUMA, facts.NUMANode{ID: k, CPUs: cpusOf(k)})
	}
	return f
}

func cpusOf(k int) string {
	return fmt.Sprintf("%d-%d,%d-%d", 100*k, 100*k+9, 1000+100*k, 1000+100*k+9)
}

// TestProfileRanks walks rank → GPU → CPUs/NIC on every built-in hardware
// profile. The expected placements are read off each module's sources
// (modules/README.md), not computed from the module.
func TestProfileRanks(t *testing.T) {
	type want struct {
		pci          string
		numa         int
		nic, netdev  string
		ncclIBHCA    string
		ucxNetDevice string
	}
	tests := []struct {
		profile string
		numa    int
		gpus    []want
	}{
		{"hgx-h100-8gpu", 2, []want{
			{"0000:1b:00.0", 0, "mlx5_0", "ibp24s0", "=mlx5_0", "mlx5_0:1"},
			{"0000:43:00.0", 0, "mlx5_3", "ibp64s0", "=mlx5_3", "mlx5_3:1"},
			{"0000:52:00.0", 0, "mlx5_4", "ibp79s0", "=mlx5_4", "mlx5_4:1"},
			{"0000:61:00.0", 0, "mlx5_5", "ibp94s0", "=mlx5_5", "mlx5_5:1"},
			{"0000:9d:00.0", 1, "mlx5_6", "ibp154s0", "=mlx5_6", "mlx5_6:1"},
			{"0000:c3:00.0", 1, "mlx5_9", "ibp192s0", "=mlx5_9", "mlx5_9:1"},
			{"0000:d1:00.0", 1, "mlx5_10", "ibp206s0", "=mlx5_10", "mlx5_10:1"},
			{"0000:df:00.0", 1, "mlx5_11", "ibp220s0", "=mlx5_11", "mlx5_11:1"},
		}},
		{"dgx-a100", 8, []want{
			{"0000:07:00.0", 3, "mlx5_0", "ibp12s0", "=mlx5_0", "mlx5_0:1"},
			{"0000:0f:00.0", 3, "mlx5_1", "ibp18s0", "=mlx5_1", "mlx5_1:1"},
			{"0000:47:00.0", 1, "mlx5_2", "ibp75s0", "=mlx5_2", "mlx5_2:1"},
			{"0000:4e:00.0", 1, "mlx5_3", "ibp84s0", "=mlx5_3", "mlx5_3:1"},
			{"0000:87:00.0", 7, "mlx5_6", "ibp141s0", "=mlx5_6", "mlx5_6:1"},
			{"0000:90:00.0", 7, "mlx5_7", "ibp148s0", "=mlx5_7", "mlx5_7:1"},
			{"0000:b7:00.0", 5, "mlx5_8", "ibp186s0", "=mlx5_8", "mlx5_8:1"},
			{"0000:bd:00.0", 5, "mlx5_9", "ibp204s0", "=mlx5_9", "mlx5_9:1"},
		}},
		{"gh200", 9, []want{
			{"0009:01:00.0", 0, "", "", "", ""},
		}},
		// GB200/GB300 trays: two GPUs per Grace, no public PCI addresses,
		// no GPU–NIC pairing in the module.
		{"gb200-nvl72-tray", 34, []want{
			{"", 0, "", "", "", ""}, {"", 0, "", "", "", ""}, {"", 1, "", "", "", ""}, {"", 1, "", "", "", ""},
		}},
		{"gb300-nvl72-tray", 34, []want{
			{"", 0, "", "", "", ""}, {"", 0, "", "", "", ""}, {"", 1, "", "", "", ""}, {"", 1, "", "", "", ""},
		}},
		{"l40s-8gpu-pcie", 2, []want{
			{"", 0, "", "", "", ""}, {"", 0, "", "", "", ""}, {"", 0, "", "", "", ""}, {"", 0, "", "", "", ""},
			{"", 1, "", "", "", ""}, {"", 1, "", "", "", ""}, {"", 1, "", "", "", ""}, {"", 1, "", "", "", ""},
		}},
		{"a100-pcie-4gpu", 4, []want{
			{"0001:00:00.0", 0, "", "", "", ""},
			{"0002:00:00.0", 1, "", "", "", ""},
			{"0003:00:00.0", 2, "", "", "", ""},
			{"0004:00:00.0", 3, "", "", "", ""},
		}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.profile] = true
		t.Run(tt.profile, func(t *testing.T) {
			b, err := bind.Compute(loadProfile(t, tt.profile), bind.FactsCPULists(nodeFacts(tt.numa)))
			if err != nil {
				t.Fatal(err)
			}
			if len(b.GPUs) != len(tt.gpus) {
				t.Fatalf("binding has %d GPUs, want %d: %+v", len(b.GPUs), len(tt.gpus), b.GPUs)
			}
			// Through the recorded file, as the launcher reads it.
			rec, err := bind.Parse([]byte(b.Marshal()))
			if err != nil {
				t.Fatal(err)
			}
			for rank, w := range tt.gpus {
				env := []string{"PATH=/usr/bin:/bin", fmt.Sprintf("LOCAL_RANK=%d", rank), "NCCL_IB_HCA=mlx5"}
				l, err := bind.Prepare(rec, env, bind.Options{GPU: -1, CUDAVisibleDevices: true}, []string{"true"})
				if err != nil {
					t.Fatalf("rank %d: %v", rank, err)
				}
				g := l.GPU
				if g.Index != rank || g.PCI != w.pci || g.NUMA != w.numa || g.CPUs != cpusOf(w.numa) || g.NIC != w.nic || g.Netdev != w.netdev {
					t.Errorf("rank %d → %+v, want GPU %d %+v with CPUs %s", rank, g, rank, w, cpusOf(w.numa))
				}
				if len(l.CPUs) != 20 || l.CPUs[0] != 100*w.numa {
					t.Errorf("rank %d: affinity %v, want node %d's 20 CPUs", rank, l.CPUs, w.numa)
				}
				got := map[string]string{}
				for _, kv := range l.Env {
					k, v, _ := strings.Cut(kv, "=")
					if _, dup := got[k]; dup {
						t.Errorf("rank %d: %s set twice in the command's environment", rank, k)
					}
					got[k] = v
				}
				wantEnv := map[string]string{"CUDA_VISIBLE_DEVICES": fmt.Sprint(rank), "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "NCCL_IB_HCA": "mlx5"}
				if w.ncclIBHCA != "" {
					wantEnv["NCCL_IB_HCA"] = w.ncclIBHCA
					wantEnv["UCX_NET_DEVICES"] = w.ucxNetDevice
				}
				for k, v := range wantEnv {
					if got[k] != v {
						t.Errorf("rank %d: %s=%q, want %q", rank, k, got[k], v)
					}
				}
				if _, ok := got["UCX_NET_DEVICES"]; ok && w.ucxNetDevice == "" {
					t.Errorf("rank %d: UCX_NET_DEVICES set for a GPU with no NIC", rank)
				}
			}
		})
	}
	// Every built-in hardware profile is covered.
	entries, err := fs.ReadDir(modules.FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), "stack-") && !covered[e.Name()] {
			t.Errorf("built-in hardware profile %s has no rank → GPU case here", e.Name())
		}
	}
}
