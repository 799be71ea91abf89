variable "cuda" {
  type    = string
  default = 12.10 # ERROR: Number loses digits
}

variable "driver" {
  type    = string
  default = 550
}

node "a" {
  hosts = ["gpu1"]
  driver {
    version = var.driver
  }
  cuda {
    version = var.cuda
  }
}
