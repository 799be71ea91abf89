# Fixture for lint rule driver_security_advisory (fires case). The releases and
# bulletins are those of kb/data/driver-advisories.tsv (NVIDIA security
# bulletins 5747, January 2026, and 5821, May 2026).

# The quickstart's old driver: before 580.126.09 (5747) and 580.159.03 (5821).
node "old" {
  hosts = ["a.example.com"]
  driver { version = "580.95.05" }
}

# 5747's fixed release is still affected by 5821.
node "jan" {
  hosts = ["b.example.com"]
  driver { version = "580.126.09" }
}

# R595 before 595.71.05.
node "r595" {
  hosts = ["c.example.com"]
  driver { version = "595.58.03" }
}

# R570 at 5703's fix, before 5747's 570.211.01 (whose only R570 CVEs are one
# for every host and one in the Virtual GPU Manager: a warning).
node "r570" {
  hosts = ["d.example.com"]
  driver { version = "570.195.03" }
}
