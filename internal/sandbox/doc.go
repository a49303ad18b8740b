// Package sandbox confines the processes that tools start (the shell and all
// it spawns, ripgrep, git clone) so that nothing a tool runs can reach the
// database, the secret key, other sessions' workspaces or the server process.
//
// It composes two kept mechanisms rather than a hand-made one:
//
//   - bubblewrap (bwrap), when installed and usable, gives each command its
//     own mount namespace (a tmpfs root with the system read-only, the
//     workspace read-write and a private /tmp), its own PID namespace (a
//     private /proc: the server and other sessions are invisible), and its
//     own network namespace, always.
//   - Landlock, through github.com/landlock-lsm/go-landlock, applied by a
//     re-executed helper of the server binary just before it execs the
//     command: filesystem access is limited to the same paths, TCP bind and
//     connect are refused while the network is off, and (ABI 6+) signals
//     and abstract UNIX sockets cannot reach outside the domain. Landlock
//     also refuses ptrace-like access, so /proc/<pid>/environ and mem of
//     processes outside the sandbox stay closed.
//
// With the network on, a command still has no host network: it keeps its
// own network namespace (Landlock-only mode too), with only loopback, and
// reaches out through the server's egress proxy (internal/egress), whose
// UNIX socket a bridge started by the helper serves on a loopback port; the
// command gets HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (bridge.go).
//
// The helper also lowers resource limits (CPU seconds, data size, number of
// processes, file size, open files) and, when the server runs as root, drops
// to an unprivileged uid/gid, so files only root may read stay unreadable.
// As root, bwrap runs in a user namespace that maps only root and that uid,
// so process counts are per sandbox rather than shared by every session.
//
// A process may name a group (a session): where the server can manage
// cgroups (root, cgroup v1 memory, pids and cpu hierarchies), the group's
// processes share one cgroup, made through github.com/containerd/cgroups,
// capping their memory, tasks and CPU weight together (cgroup.go); the
// helper joins it before anything else runs.
//
// Any binary that links this package can act as the helper (see init in
// helper.go): the server and its test binaries re-execute themselves, so the
// helper is always the same build as the server that configured it.
//
// The package knows nothing of sessions or agents: callers describe a
// process (program, arguments, environment, workspace, scratch directory,
// egress socket) and get an *exec.Cmd to start.
package sandbox
