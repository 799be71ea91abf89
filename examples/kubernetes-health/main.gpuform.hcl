# The spec health mode on Kubernetes judges each GPU node by: what a
# healthy HGX H100 node is, and how health mode acts on a failure. It goes
# into the ConfigMap gpuform-spec (kubectl create configmap gpuform-spec
# --from-file=.), which the DaemonSet of gpuform-health.yaml mounts at
# /etc/gpuform/spec on every node.

gpuform {
  required_version = ">= 0.1"
}

variable "hosts" {
  type        = list(string)
  default     = ["gpu[001-032]"]
  description = "The GPU nodes, as Kubernetes names them (the Node objects)."
}

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# This spec only judges; the node's setup belongs to the spec that
# provisions it, so lint's host advice does not apply here.
# gpuform-ignore: numa_balancing -- verification-only node, host managed elsewhere
node "gpu" {
  hosts    = var.hosts
  hardware = module.hgx.hardware

  verify {
    # The prolog's quick tier runs DCGM's level 1 diagnostic where dcgmi is
    # installed; this spec installs no DCGM, so a node without it is a skip
    # the report names.
    optional = ["dcgm"]

    nvml {
      gpus              = 8
      ecc               = true
      min_pcie_gen      = 5 # H100 SXM5 links at PCIe Gen5 x16
      min_pcie_width    = 16
      nvlink            = "all_active"
      max_temperature_c = 85
    }

    # gpuform verify -engine kubernetes: a Job per node, from this image,
    # as the service account gpuform kubernetes manifests -engine makes.
    kubernetes {
      image           = "ghcr.io/example/gpuform:0.1.0"
      service_account = "gpuform-verify-node"
      # The Job's pod names its node (nodeName): NoSchedule taints and
      # cordons do not hold it back, a NoExecute taint would evict it.
      tolerations = ["example.com/maintenance:NoExecute"]
    }
  }

  health {
    drain_after       = 3     # a monitor-class Xid (13, 31, 94) drains on its 3rd sighting
    drain_window      = "24h" # … within 24 hours
    max_drained_share = 0.1   # at most a tenth of the fleet cordoned, counted in the Lease gpuform-breaker
    confirm_delay     = "10s" # a link or performance failure drains only when it fails again
  }
}
