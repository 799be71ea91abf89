# Fixture for lint rule knowledge_base_age (fires case): linted on the date in
# fires.now (2027-03-01), 201 days after the newest fact (2026-08-12): one
# finding for the run, not one per node.
node "train" {
  hosts = ["gpu001.example.com"]
  driver { version = "580.95.05" }
}

node "infer" {
  hosts = ["gpu002.example.com"]
  driver { version = "580.95.05" }
}
