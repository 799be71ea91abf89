# Fixture for lint rule knowledge_base_age (fires case): linted on the date in
# fires.now (2027-03-01), 91 days after the refresh date (2026-11-30): one
# finding for the run, not one per node.
node "train" {
  hosts = ["gpu001.example.com"]
  driver { version = "580.95.05" }
}

node "infer" {
  hosts = ["gpu002.example.com"]
  driver { version = "580.95.05" }
}
