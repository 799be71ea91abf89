package lint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// fleetSpec generates a spec of n HGX H100 node blocks, each with the full
// set of blocks the rules read, one host each, and a suppression comment
// every tenth node so the annotation pass has work to do.
func fleetSpec(n int) map[string][]byte {
	var b strings.Builder
	b.WriteString("module \"hgx\" { source = \"gpuform/hgx-h100-8gpu\" }\n")
	for i := 0; i < n; i++ {
		ignore := ""
		if i%10 == 0 {
			ignore = " # gpuform-ignore: persistence_mode -- benchmark"
		}
		fmt.Fprintf(&b, `
node "n%04d" {
  hosts    = ["gpu%04d.dc1.example.com"]
  hardware = module.hgx.hardware
  tensor_parallel = 8
  driver {
    version          = "580.95.05"
    kernel_module    = "open"
    persistence_mode = %v%s
    fabric_manager   = true
    peermem          = true
  }
  cuda { version = "12.8.1" }
  nccl { version = "2.25.1" }
  dcgm { version = "4.2.3" }
  container {
    runtime                  = "docker"
    nvidia_container_toolkit = "1.17.8"
    default_shm_size         = "16GiB"
    ulimits                  = { memlock = "unlimited", stack = "64MiB" }
    images                   = ["nvcr.io/nvidia/pytorch:25.02-py3"]
  }
  shm { size = "50%%" }
  numa {
    balancing = false
    bind {
      gpus = [0, 1, 2, 3]
      node = 0
    }
    bind {
      gpus = [4, 5, 6, 7]
      node = 1
    }
  }
  affinity {
    gpu_nic  = module.hgx.gpu_nic
    nccl_env = true
  }
  kernel_args = ["iommu=pt"]
  verify {
    nvml {
      gpus = 8
    }
    nccl_test "allreduce" {
      command        = "all_reduce_perf -b 8 -e 8G -f 2 -g 8"
      min_busbw_gbps = 400
    }
  }
}
`, i, i, i%10 != 0, ignore)
	}
	return map[string][]byte{"fleet.gpuform.hcl": []byte(b.String())}
}

func loadFleet(b *testing.B, files map[string][]byte) *spec.Config {
	cfg, diags := spec.LoadFiles(files, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	return cfg
}

// BenchmarkLoad1000 is the baseline: loading and evaluating a 1,000-node
// spec. BenchmarkLint1000 must stay under 3x of it (issue 3).
func BenchmarkLoad1000(b *testing.B) {
	files := fleetSpec(1000)
	b.ResetTimer()
	for b.Loop() {
		loadFleet(b, files)
	}
}

// BenchmarkLint1000 lints the same loaded spec with every rule.
func BenchmarkLint1000(b *testing.B) {
	cfg := loadFleet(b, fleetSpec(1000))
	b.ResetTimer()
	for b.Loop() {
		res, _ := Run(cfg, Options{KB: testKB, Now: testNow})
		if len(res.Suppressed) == 0 {
			b.Fatal("suppressions were not applied")
		}
	}
}
