module "hw" {
  source = "gpuform/hgx-h100" # ERROR: Cannot load module
}
