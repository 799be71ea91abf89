package lint

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
)

// inventoryUserConflictRule declares inventory_user_conflict.
func inventoryUserConflictRule() Rule {
	return Rule{
		Name:     "inventory_user_conflict",
		Severity: Error,
		Summary:  "The same host is in two inventories with different SSH users.",
		Check:    checkInventoryUsers,
	}
}

func checkInventoryUsers(ctx *Context) {
	names := make([]string, 0, len(ctx.Config.Inventories))
	for name, inv := range ctx.Config.Inventories {
		if inv != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	type seen struct {
		inv, user string
	}
	first := map[string]seen{}
	type key struct {
		rng       hcl.Range
		inv, prev string
		user, was string
	}
	groups := map[key][]string{}
	var order []key
	for _, name := range names {
		inv := ctx.Config.Inventories[name]
		for _, h := range inv.Hosts {
			prev, ok := first[h.V]
			if !ok {
				first[h.V] = seen{inv: name, user: inv.User.V}
				continue
			}
			if prev.inv == name || prev.user == inv.User.V {
				continue
			}
			k := key{h.Range, name, prev.inv, inv.User.V, prev.user}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], h.V)
		}
	}
	for _, k := range order {
		ctx.Report(k.rng,
			fmt.Sprintf("%s in inventory %q as user %s but in inventory %q as user %s", hostList(groups[k]), k.inv, quoteUser(k.user), k.prev, quoteUser(k.was)),
			"gpuform would reach the same machine with two identities depending on which node names it, so one of them fails (or, worse, runs with other privileges). Use one user per host: move the host to a single inventory or align the user attributes.")
	}
}

func quoteUser(u string) string {
	if u == "" {
		return "(default)"
	}
	return fmt.Sprintf("%q", u)
}
