# Fixture for lint rule knowledge_base_age (clean case): linted on the test
# date (2026-11-30), 110 days after the newest fact (2026-08-12).
node "train" {
  hosts = ["gpu001.example.com"]
  driver { version = "580.95.05" }
}

node "infer" {
  hosts = ["gpu002.example.com"]
  driver { version = "580.95.05" }
}
