gpuform {
  name = "hgx training" # ERROR: Invalid spec name
}
