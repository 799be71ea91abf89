node "a" {
  hosts = ["gpu1", "gpu2"]
  verify {
    isolation              = "sometimes" # ERROR: Invalid value for "isolation"
    outliers               = "ignore" # ERROR: Invalid value for "outliers"
    outlier_margin_percent = 80 # ERROR: Invalid value for "outlier_margin_percent"
  }
}
