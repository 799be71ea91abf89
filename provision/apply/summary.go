package apply

import "encoding/json"

// Summary is the count of hosts per status that apply's text report ends
// with, carried in the JSON document so that a pipeline reads the totals
// instead of counting hosts.
type Summary struct {
	// Hosts is how many hosts the apply covered.
	Hosts int `json:"hosts"`
	// Succeeded, RebootPending, Rebooted, Failed and Skipped count the
	// hosts with that status; every count is present, zero or not, so the
	// document's shape does not depend on what happened.
	Succeeded     int `json:"succeeded"`
	RebootPending int `json:"reboot_pending"`
	Rebooted      int `json:"rebooted"`
	Failed        int `json:"failed"`
	Skipped       int `json:"skipped"`
	// Converged is true when every host converged: apply exits 0 then.
	Converged bool `json:"converged"`
	// Resources totals the hosts' resources added, changed and destroyed
	// (the recap's "Apply complete! Resources: …"). A field added to the
	// 2.x format.
	Resources ResourceCounts `json:"resources"`
	// Steps totals the steps that ran on every host.
	Steps int `json:"steps"`
}

// Summary counts the report's hosts per status.
func (r *Report) Summary() Summary {
	s := Summary{Hosts: len(r.Hosts), Succeeded: r.Count(Succeeded), RebootPending: r.Count(RebootPending),
		Rebooted: r.Count(Rebooted), Failed: r.Count(Failed), Skipped: r.Count(Skipped), Converged: r.Converged()}
	for _, h := range r.Hosts {
		s.Resources.add(h.Resources)
		s.Steps += h.StepsRun
	}
	return s
}

// MarshalJSON writes the report with its summary object after the hosts.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		Summary Summary `json:"summary"`
	}{plain(r), r.Summary()})
}
