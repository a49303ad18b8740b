package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
)

// helperInside is where the helper binary is mounted inside bubblewrap.
const helperInside = "/run/harness/sandbox-helper"

// bwrapCommand runs the helper inside bubblewrap: a tmpfs root with the
// system read-only, the workspace (at its real path, so paths agree with the
// file tools), a private /tmp, /proc and /dev, and new PID, IPC, UTS and
// network namespaces; a network-on command reaches out only through the
// egress proxy socket mounted inside.
//
// As root, bubblewrap starts in a user namespace that maps only root and the
// tools' uid: it can still mount what root may read, the helper then drops
// to that uid, and RLIMIT_NPROC counts only this sandbox's processes. As
// another user, bubblewrap makes the user namespace itself and forbids
// nested ones.
func (s *Sandbox) bwrapCommand(p Process) (*exec.Cmd, error) {
	args := []string{
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
		"--hostname", "sandbox",
	}
	asRoot := os.Geteuid() == 0
	if !asRoot {
		args = append(args, "--unshare-user", "--disable-userns")
	}
	for _, dir := range s.status.ReadOnly {
		args = append(args, systemMount(dir)...)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	if p.Scratch != "" {
		args = append(args, "--bind", p.Scratch, "/tmp")
	} else {
		args = append(args, "--tmpfs", "/tmp")
	}
	args = append(args, "--symlink", "/tmp", "/var/tmp")
	mounted := []string{"/", "/tmp", "/proc", "/dev", "/var"}
	for _, ro := range p.ReadOnly {
		args = append(args, parentDirs(ro, mounted)...)
		args = append(args, "--ro-bind", ro, ro)
	}
	args = append(args, parentDirs(p.Workspace, mounted)...)
	wsBind := "--bind"
	if p.WorkspaceReadOnly {
		wsBind = "--ro-bind"
	}
	args = append(args, wsBind, p.Workspace, p.Workspace)
	if p.Egress != "" {
		// The bridge runs as the tools' user: /run/harness must be
		// traversable (bubblewrap makes implicit parents 0700).
		args = append(args, "--perms", "0711", "--dir", filepath.Dir(egressInside), "--bind", p.Egress, egressInside)
	}
	args = append(args, "--ro-bind", s.exe, helperInside)
	args = append(args, "--chdir", p.Dir)

	spec := s.baseSpec(p)
	spec.RO = append(spec.RO, "/proc")
	spec.RO = append(spec.RO, p.ReadOnly...)
	if p.WorkspaceReadOnly {
		spec.RO = append(spec.RO, p.Workspace)
	} else {
		spec.RW = append(spec.RW, p.Workspace)
	}
	spec.RW = append(spec.RW, "/tmp")
	spec.DevDirs = []string{"/dev"}
	if p.Egress != "" {
		spec.Egress = egressInside
	}
	enc, err := encodeSpec(spec)
	if err != nil {
		return nil, err
	}
	args = append(args, "--", helperInside, helperArg, enc)

	cmd := exec.Command(s.bwrap, args...)
	cmd.Env = withHome(p.Env, "/tmp")
	attr := &syscall.SysProcAttr{Setpgid: true}
	if asRoot {
		uid, gid := s.identity(p)
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = idMap(uid)
		attr.GidMappings = idMap(gid)
		attr.GidMappingsEnableSetgroups = true
	}
	cmd.SysProcAttr = attr
	return cmd, nil
}

// idMap maps id to itself, and root too when the server is root (it sets
// up the sandbox before dropping to id). An unprivileged server may map only
// its own id.
func idMap(id int) []syscall.SysProcIDMap {
	if os.Geteuid() != 0 {
		return []syscall.SysProcIDMap{{ContainerID: id, HostID: id, Size: 1}}
	}
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	if id != 0 {
		m = append(m, syscall.SysProcIDMap{ContainerID: id, HostID: id, Size: 1})
	}
	return m
}

// systemMount mounts a host system path read-only, as a symlink when it is
// one on the host (merged-/usr systems link /bin to usr/bin).
func systemMount(dir string) []string {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(dir)
		if err != nil {
			return nil
		}
		return []string{"--symlink", target, dir}
	}
	return []string{"--ro-bind", dir, dir}
}

// parentDirs creates the ancestors of p that are not mounted yet as
// world-traversable directories, so the tools' uid can reach p by its
// absolute path even when the host's ancestors are private (/root).
func parentDirs(p string, mounted []string) []string {
	var out []string
	var chain []string
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		chain = append(chain, d)
	}
	slices.Reverse(chain)
	for _, d := range chain {
		if isMountedUnder(d, mounted) {
			continue
		}
		out = append(out, "--perms", "0755", "--dir", d)
	}
	return out
}

// isMountedUnder reports whether d is itself a mount point of the sandbox
// (the root tmpfs aside); directories below a mount are created inside it.
func isMountedUnder(d string, mounted []string) bool {
	return d != "/" && slices.Contains(mounted, d)
}
