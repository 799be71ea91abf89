module "hw" {
  source = "gpuform/hgx-h100" # ERROR: Unknown built-in module
}
