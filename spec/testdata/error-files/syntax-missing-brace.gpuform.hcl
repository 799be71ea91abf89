node "a" {
  hosts = ["sim://hgx-h100-stale"]
  driver { # ERROR: Unclosed configuration block
    version = "550.127.08"
