// Package promtool runs Prometheus's own promtool in tests, so that the
// metrics and alerting rules gpuform writes are judged by the tool
// Prometheus users judge them with. scripts/test.sh installs it (Debian's
// prometheus package); where it is missing the test skips, and fails in CI
// (sshtest.Missing).
package promtool

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/gpuform/gpuform/internal/sshtest"
)

// Path returns promtool's path, or ends the test through sshtest.Missing.
func Path(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		sshtest.Missing(t, "promtool not found: install Debian's prometheus package (apt-get install prometheus)")
	}
	return p
}

// CheckMetrics runs `promtool check metrics` on a text exposition and
// fails the test with promtool's output when it finds any problem (its
// lint warnings included: promtool exits non-zero on them).
func CheckMetrics(t testing.TB, exposition []byte) {
	t.Helper()
	cmd := exec.Command(Path(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// CheckRules runs `promtool check rules` on rule files and fails the test
// with its output when a file is not a valid rule file.
func CheckRules(t testing.TB, files ...string) {
	t.Helper()
	cmd := exec.Command(Path(t), append([]string{"check", "rules"}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}

// TestRules runs `promtool test rules` on a unit-test file (Prometheus's
// format: rule_files, input_series, alert_rule_test) and fails the test
// with promtool's output when an expectation does not hold.
func TestRules(t testing.TB, testFile string) {
	t.Helper()
	cmd := exec.Command(Path(t), "test", "rules", testFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}
