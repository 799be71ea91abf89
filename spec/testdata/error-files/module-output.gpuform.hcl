module "stack" {
  source = "gpuform/stack-cuda12-8"
}

node "a" {
  hosts = ["gpu1"]
  driver {
    version = module.stack.driver # ERROR: Unsupported module output
  }
}
