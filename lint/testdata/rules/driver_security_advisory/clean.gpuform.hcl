# Fixture for lint rule driver_security_advisory (clean case): the first
# releases with every fix of the bulletins gpuform has read, and a floating
# branch (judged once the lock file pins it).
node "r580" {
  hosts = ["a.example.com"]
  driver { version = "580.159.03" }
}

node "r595" {
  hosts = ["b.example.com"]
  driver { version = "595.71.05" }
}

node "float" {
  hosts = ["c.example.com"]
  driver { version = "580" }
}
