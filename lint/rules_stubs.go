package lint

func driverRules() []Rule { return nil }
func fabricRules() []Rule { return nil }
func verifyRules() []Rule { return nil }
