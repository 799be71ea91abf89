node "a" {
  hosts = ["gpu[01-10]"]
  health {
    drain_after       = 3
    drain_window      = "90d" # ERROR: Invalid duration
    max_drained_share = 0.1
    valid_for         = "1h"
  }
}
