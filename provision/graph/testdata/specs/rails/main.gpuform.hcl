# An HGX H100 node that pairs every GPU with its compute rail: drawn from
# the facts of sim://hgx-h100-slownic (mlx5_5 up at 200 Gb/s HDR on 400 Gb/s
# NDR hardware) and sim://hgx-h100-degraded (mlx5_3 likewise), the rail is a
# problem on the picture; the storage ports mlx5_2 and mlx5_8, DOWN on both,
# are named nowhere and judged by nothing.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "rails" {
  hosts    = ["sim://hgx-h100-slownic"]
  hardware = module.hgx.hardware

  affinity {
    gpu_nic = module.hgx.gpu_nic
  }
}
