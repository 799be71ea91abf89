package sim_test

import "os/exec"

// runPlain runs a program with only the given environment, returning its
// combined output.
func runPlain(prog string, env ...string) (string, error) {
	cmd := exec.Command(prog, "update")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
