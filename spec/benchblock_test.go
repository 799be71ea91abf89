package spec_test

import (
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// TestBenchBlock decodes a complete bench block; the invalid forms are in
// testdata/error-files/bench.gpuform.hcl.
func TestBenchBlock(t *testing.T) {
	src := `node "a" {
  hosts = ["gpu1"]
  bench {
    command    = "torchrun --nproc_per_node={gpus} train.py --steps 50"
    throughput = "samples/s: ([0-9.]+)"
    gpus       = [1, 2, 4, 8]
    timeout    = "20m"
    tools      = ["perftest", "fio"]
    storage "dataset" {
      path          = "/data/imagenet"
      min_read_gbps = 5
    }
    storage "checkpoint" {
      path = "/ckpt"
    }
  }
}
`
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b := cfg.Nodes[0].Bench
	if b == nil {
		t.Fatal("no bench block decoded")
	}
	if b.ThroughputRE == nil || b.ThroughputRE.FindStringSubmatch("samples/s: 123.5")[1] != "123.5" {
		t.Errorf("throughput pattern: %v", b.ThroughputRE)
	}
	if len(b.GPUs) != 4 || b.GPUs[3].V != 8 || b.Timeout.V != 20*time.Minute {
		t.Errorf("gpus %v timeout %v", b.GPUs, b.Timeout.V)
	}
	if len(b.Tools) != 2 || b.Tools[0].V != "perftest" || b.Tools[1].V != "fio" {
		t.Errorf("tools %v", b.Tools)
	}
	if len(b.Storage) != 2 || b.Storage[0].Path.V != "/data/imagenet" || b.Storage[0].MinReadGBps.V != 5 || b.Storage[1].MinReadGBps.Set {
		t.Errorf("storage %+v", b.Storage)
	}
}

// TestBenchCheckpointBlock decodes bench's checkpoint block, set and
// left to its defaults; the invalid forms are in
// testdata/error-files/bench-checkpoint.gpuform.hcl.
func TestBenchCheckpointBlock(t *testing.T) {
	src := `node "a" {
  hosts = ["gpu1"]
  bench {
    command    = "train --gpus={gpus} --ckpt-dir=/scratch/ckpt"
    throughput = "samples/s: ([0-9.]+)"
    checkpoint {
      resume_command      = "train --gpus={gpus} --ckpt-dir=/scratch/ckpt --resume"
      resumed             = "resumed from step ([0-9]+)"
      dir                 = "/scratch/ckpt"
      kill_after          = "45s"
      max_throughput_loss = 0.05
      gpus                = 4
      timeout             = "5m"
    }
  }
}
node "b" {
  hosts = ["gpu2"]
  bench {
    command    = "train --gpus={gpus}"
    throughput = "samples/s: ([0-9.]+)"
    checkpoint {
      resume_command = "train --gpus={gpus} --resume"
      resumed        = "from step ([0-9]+)"
    }
  }
}
`
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := cfg.Nodes[0].Bench.Checkpoint
	if c == nil {
		t.Fatal("no checkpoint block decoded")
	}
	if c.ResumeCommand.V != "train --gpus={gpus} --ckpt-dir=/scratch/ckpt --resume" || c.Dir.V != "/scratch/ckpt" {
		t.Errorf("resume_command %q dir %q", c.ResumeCommand.V, c.Dir.V)
	}
	if c.ResumedRE == nil || c.ResumedRE.FindStringSubmatch("resumed from step 120")[1] != "120" {
		t.Errorf("resumed pattern: %v", c.ResumedRE)
	}
	if c.KillAfter.V != 45*time.Second || c.MaxThroughputLoss.V != 0.05 || c.GPUs.V != 4 || c.Timeout.V != 5*time.Minute {
		t.Errorf("kill_after %v loss %v gpus %v timeout %v", c.KillAfter.V, c.MaxThroughputLoss.V, c.GPUs.V, c.Timeout.V)
	}
	d := cfg.Nodes[1].Bench.Checkpoint
	if d == nil || d.KillAfter.Set || d.MaxThroughputLoss.Set || d.GPUs.Set || d.Timeout.Set || d.Dir.Set {
		t.Errorf("defaults: %+v", d)
	}
}

// TestBenchCommandWithoutPlaceholder warns: the command would run the same
// way at every GPU count.
func TestBenchCommandWithoutPlaceholder(t *testing.T) {
	src := `node "a" {
  hosts = ["gpu1"]
  bench {
    command    = "python train.py"
    throughput = "it/s ([0-9.]+)"
  }
}
`
	_, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
	if diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Bench command without {gpus}" {
		t.Fatalf("diags: %v", diags)
	}
}
