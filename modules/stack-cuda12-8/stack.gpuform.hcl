# gpuform/stack-cuda12-8: a driver / CUDA / NCCL / DCGM / container-toolkit set
# that works together, every version taken from gpuform's reference tables
# (kb/data/*.tsv, the knowledge base embedded in the binary), row by row:
#
#   driver 580.159.03  R580 is a Long Term Support Branch, end of life June-August 2028
#                      (driver-branches.tsv row R580). 580.159.03 is the first R580
#                      data-center Linux release NVIDIA's security bulletin 5821 (May
#                      2026) lists as fixed, which also carries bulletin 5747's fixes
#                      (580.126.09) (driver-advisories.tsv): the earlier pin, 580.95.05,
#                      is affected by both.
#   CUDA 12.8.1        cuda-driver.tsv row "12.8 Update 1": toolkit needs >=570.124.06;
#                      580.159.03 is newer, and cuda-mvc.tsv row 12.x says newer drivers run
#                      12.x through backward compatibility.
#   NCCL 2.25.1        nccl-cuda.tsv row 2.25.1: CUDA 12.8.0 and 12.8.1 images pin
#                      2.25.1-1+cuda12.8 (confirmed), so the build matches CUDA 12.8.
#   DCGM 4.6.0         packages.tsv rows "DCGM 4.x": datacenter-gpu-manager-4-cuda12 packages;
#                      GPU Operator 26.7.0 ships 1:4.6.0-1 (confirmed).
#   toolkit 1.19.1     container-toolkit.tsv row 1.19.1 (2026-05-21, confirmed), apt
#                      1.19.1-1, rpm 1.19.1-1; the first release NVIDIA lists as fixed
#                      for CVE-2026-24260 (lint/data/container-toolkit-advisories.tsv).
#   image pytorch:25.03-py3
#                      ngc-pytorch.tsv row 25.03: CUDA 12.8.1, NCCL 2.25.1 (secondary:
#                      NVIDIA TensorRT-LLM install script aligned with the rel-25-03 notes);
#                      same CUDA and NCCL as the host stack above.
#
# Public sources of those rows:
#   https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html (Tables 2 and 3)
#   https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
#   https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
#   https://nvidia.custhelp.com/app/answers/detail/a_id/5821 (security bulletin 5821)
#   https://github.com/NVIDIA/nccl/tags and https://developer.download.nvidia.com/compute/redist/nccl
#   https://github.com/NVIDIA/nvidia-container-toolkit/tags
#   https://github.com/NVIDIA/DCGM/blob/72fa3feaa67d716a75323a8f47c34ff3ee73f824/cmake/packaging.cmake
#   https://github.com/NVIDIA/TensorRT-LLM/blob/0237cabd8564e20bf7790db5df17bb631412011c/docker/common/install_tensorrt.sh
#
# Kernel module flavour: "open" - the default flavour from R560 and required on
# GH200 (facts.tsv rows open-modules-default, open-modules-gh200, confirmed);
# every GPU of the built-in hardware profiles is Turing or newer (gpu-models.tsv).

output "driver_version" {
  description = "NVIDIA driver release (R580 LTSB)."
  value       = "580.159.03"
}

output "kernel_module" {
  description = "Driver kernel module flavour."
  value       = "open"
}

output "cuda_version" {
  description = "CUDA toolkit release."
  value       = "12.8.1"
}

output "nccl_version" {
  description = "NCCL release, built for CUDA 12.8."
  value       = "2.25.1"
}

output "dcgm_version" {
  description = "DCGM release (4.x packages)."
  value       = "4.6.0"
}

output "container_toolkit_version" {
  description = "NVIDIA Container Toolkit release."
  value       = "1.19.1"
}

output "pytorch_image" {
  description = "NGC PyTorch image built on the same CUDA and NCCL."
  value       = "nvcr.io/nvidia/pytorch:25.03-py3"
}
