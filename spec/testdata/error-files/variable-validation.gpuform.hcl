variable "batch" { # ERROR: Invalid value for variable
  type    = number
  default = 0
  validation {
    condition     = var.batch > 0
    error_message = "The batch size must be at least 1."
  }
}
