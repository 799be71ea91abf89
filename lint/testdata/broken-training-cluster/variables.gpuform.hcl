# Inputs a platform team changes per cluster or per run. Override with
# -var 'name=value', a -var-file, a *.auto.gpuvars.hcl file or GPUFORM_VAR_name.

variable "hosts" {
  type        = list(string)
  default     = ["gpu[001-032].dc1.example.com"]
  description = "Slurm-style host ranges of the training nodes."
}

variable "ssh_user" {
  type        = string
  default     = "ops"
  description = "Login user on the nodes; it needs password-less sudo."
}

variable "bastion" {
  type        = string
  default     = "bastion.dc1.example.com"
  description = "ProxyJump host in front of the GPU network."
}

variable "rollout_batch" {
  type        = number
  default     = 4
  description = "Nodes drained and changed at once; 4 of 32 keeps 87% of the cluster in Slurm."

  validation {
    condition     = var.rollout_batch >= 1 && var.rollout_batch <= 8
    error_message = "Roll out between 1 and 8 nodes at a time."
  }
}

variable "allreduce_floor_gbps" {
  type        = number
  default     = 460
  description = "Single-node 8-GPU all_reduce bus bandwidth floor at 16 GB, GB/s."

  validation {
    condition     = var.allreduce_floor_gbps > 0 && var.allreduce_floor_gbps < 900
    error_message = "The floor must be positive and below the 900 GB/s NVLink bandwidth of one H100."
  }
}
