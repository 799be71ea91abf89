# A host nothing listens for: port 1 of the loopback address refuses the
# connection.
node "gone" {
  hosts = ["ssh://nobody@127.0.0.1:1"]
}
