gpuform {
  required_version = ">= 9.0" # ERROR: Unsupported gpuform version
}
