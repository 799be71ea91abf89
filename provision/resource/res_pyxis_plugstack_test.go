package resource

import "testing"

// TestEditPlugstack: only the keyword and the plugin path of the pyxis
// line change; every other byte of the file is kept.
func TestEditPlugstack(t *testing.T) {
	const want = "required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"
	cases := []struct{ name, in, out string }{
		{"arguments and comment", "# site\n  optional /usr/local/lib/slurm/spank_pyxis.so container_scope=global  runtime_path=/run/pyxis # keep\n",
			"# site\n  " + want + " container_scope=global  runtime_path=/run/pyxis # keep\n"},
		{"no final newline", "required /x/spank_pyxis.so sbatch_support=1", want + " sbatch_support=1"},
		{"no pyxis line", "include /etc/slurm/other/*.conf\n#required /x/spank_pyxis.so\n", "include /etc/slurm/other/*.conf\n#required /x/spank_pyxis.so\n" + want + "\n"},
		{"no pyxis line, no newline", "optional /x/spank_other.so", "optional /x/spank_other.so\n" + want + "\n"},
		{"already right", want + " a=b\n", want + " a=b\n"},
		{"tabs and CR", "\trequired\t/x/spank_pyxis.so\targ=1\r\n", "\t" + want + "\targ=1\r\n"},
	}
	for _, tc := range cases {
		got, err := editPlugstack(tc.in, want)
		if err != nil || got != tc.out {
			t.Errorf("%s: %q %v, want %q", tc.name, got, err, tc.out)
		}
	}
	if _, err := editPlugstack("required /a/spank_pyxis.so\noptional /b/spank_pyxis.so\n", want); err == nil {
		t.Error("two pyxis lines: no error")
	}
}
