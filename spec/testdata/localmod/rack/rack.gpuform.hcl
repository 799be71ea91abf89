variable "gpus" {
  type    = number
  default = 4
}

variable "prefix" {
  type    = string
  default = "rack1-gpu"
}

locals {
  pattern = "${var.prefix}[01-04]"
}

output "hosts" {
  value = [local.pattern]
}

output "gpus" {
  value = var.gpus * 2
}
