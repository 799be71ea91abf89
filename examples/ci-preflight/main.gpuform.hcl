# Pre-launch gate for a training pipeline: no driver, stack or rollout settings,
# only what the allocated nodes must be. The pipeline passes the hosts it was
# given and runs `gpuform verify`; a failed check exits 2 and the job does not
# start on a broken node.

gpuform {
  required_version = ">= 0.1"
}

variable "hosts" {
  type        = list(string)
  default     = ["sim://dgx-a100"]
  description = "Hosts the scheduler allocated, e.g. from `scontrol show hostnames`."
}

variable "ssh_user" {
  type        = string
  default     = "ci"
  description = "Read-only account the pipeline logs in with."
}

variable "allreduce_floor_gbps" {
  type        = number
  default     = 228
  description = "8x A100 80GB single-node all_reduce floor at 16 GB, GB/s."
}

module "dgx" {
  source = "gpuform/dgx-a100"
}

inventory "allocated" {
  hosts = var.hosts
  user  = var.ssh_user
}

# This spec only verifies; NUMA balancing and the rest of the host setup belong
# to the spec that provisions the nodes, so lint's host advice does not apply.
# gpuform-ignore: numa_balancing -- verification-only node, host managed elsewhere
node "preflight" {
  hosts    = inventory.allocated
  hardware = module.dgx.hardware

  verify {
    # The quick tier runs DCGM's diagnostics where dcgmi is installed. This
    # spec installs no DCGM (no dcgm block), so a node without dcgmi is a
    # skip by default, which the report says; the line below says so
    # explicitly. The simulated DGX A100 has no DCGM: dcgm.diag is a skip,
    # shown and counted in the summary. A spec that pins DCGM
    # (dcgm { version }) fails a node without it.
    optional = ["dcgm"]

    nvml {
      gpus              = 8
      ecc               = true
      min_pcie_gen      = 4 # A100 SXM4 links at PCIe Gen4 x16
      min_pcie_width    = 16
      nvlink            = "all_active"
      max_temperature_c = 85
    }

    # Floor from Azure's health checks for 8x A100 80GB (ND96amsr A100 v4):
    # all_reduce at a single 16 GB message, 228 GB/s (nccl-thresholds.tsv).
    nccl_test "allreduce" {
      command        = "all_reduce_perf -b 16G -e 16G -f 2 -g 8"
      min_busbw_gbps = var.allreduce_floor_gbps
      timeout        = "5m"
    }
  }
}
