package resource

import "testing"

// TestIMEXPackageName: the IMEX package comes from the knowledge base for
// each family at the driver's branch, exact release or branch only; a
// driver that does not parse is an error (a family without a row is one
// too: kb's TestIMEXPackage).
func TestIMEXPackageName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		family, driver, want string
	}{
		{FamilyDebian, "580.159.03", "nvidia-imex-580"},
		{FamilyRHEL, "570.211.01", "nvidia-imex-570"},
		{FamilyDebian, "580", "nvidia-imex-580"},
	} {
		got, err := imexPackageName(testKB, tt.family, tt.driver)
		if err != nil || got != tt.want {
			t.Errorf("%s %s: %q, %v; want %q", tt.family, tt.driver, got, err, tt.want)
		}
	}
	if got, err := imexPackageName(testKB, FamilyDebian, "latest"); err == nil {
		t.Errorf("driver latest: %q", got)
	}
}
