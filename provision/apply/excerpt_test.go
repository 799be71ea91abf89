package apply

import "testing"

func TestFailureExcerpt(t *testing.T) {
	tests := map[string]struct {
		stderr, stdout, want string
	}{
		"apt missing version leads": {
			stderr: "E: Version '580.999.99-*' for 'nvidia-open' was not found\n",
			stdout: "Reading package lists...\nBuilding dependency tree...\nPackage nvidia-open is not available, but is referred to by another package.\nThis may mean that the package is missing, has been obsoleted, or\nis only available from another source\n",
			want:   "E: Version '580.999.99-*' for 'nvidia-open' was not found / This may mean that the package is missing, has been obsoleted, or / is only available from another source",
		},
		"unmet dependencies": {
			stderr: "E: Unable to correct problems, you have held broken packages.\n",
			stdout: "The following packages have unmet dependencies:\n cuda-drivers-550 : Depends: nvidia-kernel-source-550 (= 550.127.08-1) but it is not installable\n                    Depends: nvidia-fabricmanager (>= 1)\n",
			want:   "E: Unable to correct problems, you have held broken packages. / cuda-drivers-550 : Depends: nvidia-kernel-source-550 (= 550.127.08-1) but it is not installable / Depends: nvidia-fabricmanager (>= 1) / The following packages have unmet dependencies:",
		},
		"dpkg interrupted": {
			stderr: "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem. \n",
			want:   "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem.",
		},
		"dnf problem": {
			stderr: "Error: \n Problem: cannot install both nvidia-fabricmanager-580 and nvidia-fabricmanager-550\n  - conflicting requests\n",
			want:   "Error: / Problem: cannot install both nvidia-fabricmanager-580 and nvidia-fabricmanager-550 / - conflicting requests",
		},
		"no error lines: the last ones": {
			stderr: "one\ntwo\nthree\nfour\n",
			want:   "two / three / four",
		},
		"a dash list without a problem is not an error": {
			stdout: "- item\nlast\n",
			want:   "- item / last",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := failureExcerpt(tc.stderr, tc.stdout, 3); got != tc.want {
				t.Errorf("failureExcerpt =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
