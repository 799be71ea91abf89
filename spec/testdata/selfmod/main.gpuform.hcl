module "me" {
  source = "./"
}
