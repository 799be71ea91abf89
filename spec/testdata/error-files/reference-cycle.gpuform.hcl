locals {
  driver = local.branch # ERROR: Cycle in references
  branch = local.driver
}
