// Package debroot gives tests a disposable Debian 12 node with the real apt
// and dpkg: a debootstrap root (built once from the Debian mirror this
// machine's apt already uses, then cached), a local apt repository of
// packages built in the test with dpkg-deb, and an OpenSSH sshd chrooted
// into the root on 127.0.0.1, running in its own mount and PID namespace.
//
// It exists because simulated apt-get and dpkg stand-ins only behave as far
// as their author understood apt: held packages, Conflicts/Replaces,
// exact-version dependencies, interrupted dpkg runs and the dpkg lock are
// what real apt decides, and gpuform must converge against those decisions.
//
// # Using it
//
//	r := debroot.Start(t, debroot.Options{Packages: debroot.NVIDIARepo()})
//	// r.SSHConfig, r.KnownHosts, r.Identity, r.Alias: what gpuform dials
//	// r.Run(t, "dpkg -l")  runs a command in the root (chroot, as root)
//	// r.Publish(t, debs...)  adds packages to the repository later
//	// r.Calls(t)  the recorded calls of the stubbed tools
//
// With Options.Offline the root runs in a network namespace of its own
// with only loopback up, as an air-gapped node: gpuform reaches its sshd
// through a forwarder in the test process, and r.Routes(t) reads the
// namespace's routes (none) and interfaces (lo). r.Enter(t) is the
// command line that runs a tool of the root's from outside (nsenter and
// chroot), for a test that checks with the root's dnf.
//
// Everything that would touch the machine running the tests is a recording
// stub inside the root: reboot, shutdown, sysctl, mount, umount, modprobe,
// rmmod, update-grub, grub-mkconfig, grub2-mkconfig, grubby and
// update-initramfs append their command line to
// /var/log/gpuform-test/calls.log and succeed; systemctl is the simulated
// nodes' stand-in (provision/sim/standins/systemctl), which records enabled
// and started units in files the facts probe reads.
//
// # Requirements
//
// The harness needs root (chroot, unshare, mounts), debootstrap, unshare,
// chroot, dpkg-deb and sshd on the machine, and the first run needs the
// Debian archive. When something is missing the test is skipped with the
// reason — unless CI is set (to anything but "", "false" or "0"), where it
// fails, as internal/sshtest does: a CI run that skips the real-apt
// scenarios proves nothing. scripts/test.sh installs debootstrap.
//
// # Cache
//
// The debootstrap root is built once into $GPUFORM_TEST_CACHE, else
// $XDG_CACHE_HOME/gpuform-test, else /var/cache/gpuform-test, in a directory
// named by BaseVersion; change BaseVersion to rebuild it. Each test copies
// it (cp -a --reflink=auto) into its own temporary directory. The mirror is
// the first Debian archive URI in /etc/apt/sources.list(.d); set
// GPUFORM_DEBIAN_MIRROR to use another.
package debroot
