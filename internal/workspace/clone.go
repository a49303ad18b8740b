package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"harness/internal/sandbox"
)

// CloneTimeout bounds a clone.
const CloneTimeout = 15 * time.Minute

// CloneSource is a checked clone source: a URL on an allowed host, or a
// local repository under a root the user may use.
type CloneSource struct {
	URL   string `json:"url,omitempty"`
	Local string `json:"local,omitempty"`
}

// String is what the UI and the log show.
func (c CloneSource) String() string {
	if c.Local != "" {
		return c.Local
	}
	return c.URL
}

// CheckClone validates what u asked to clone. Network sources must be
// http(s) URLs without credentials on a host the admin allowed ("host" or
// "host:port" allows https; an entry written "http://host:port" allows plain
// http); local sources must be directories under a root u may use.
func (m *Manager) CheckClone(ctx context.Context, u User, src string) (CloneSource, error) {
	src = strings.TrimSpace(src)
	if src == "" {
		return CloneSource{}, fmt.Errorf("%w: give a repository URL or path to clone", ErrInvalid)
	}
	if p, ok := strings.CutPrefix(src, "file://"); ok {
		src = p
	}
	if filepath.IsAbs(src) {
		real, _, err := m.underRoot(ctx, u, src)
		if err != nil {
			return CloneSource{}, err
		}
		return CloneSource{Local: real}, nil
	}
	pu, err := url.Parse(src)
	if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
		return CloneSource{}, fmt.Errorf("%w: clone from an https URL on an allowed host, or an absolute path under a workspace root", ErrInvalid)
	}
	if pu.User != nil {
		return CloneSource{}, fmt.Errorf("%w: the URL must not carry credentials", ErrInvalid)
	}
	if pu.RawQuery != "" || pu.Fragment != "" {
		return CloneSource{}, fmt.Errorf("%w: the URL must not have a query or fragment", ErrInvalid)
	}
	hosts, err := m.d.GitHosts(ctx)
	if err != nil {
		return CloneSource{}, fmt.Errorf("git hosts: %w", err)
	}
	if !hostAllowed(hosts, pu) {
		return CloneSource{}, fmt.Errorf("%w: %s is not an allowed git host; an admin allows hosts with HARNESS_GIT_HOSTS or in Settings", ErrNotAllowed, pu.Host)
	}
	return CloneSource{URL: pu.String()}, nil
}

// hostAllowed matches a URL against the allow-list.
func hostAllowed(hosts []string, u *url.URL) bool {
	host := strings.ToLower(u.Host)
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		scheme := "https"
		if rest, ok := strings.CutPrefix(h, "http://"); ok {
			scheme, h = "http", rest
		} else if rest, ok := strings.CutPrefix(h, "https://"); ok {
			h = rest
		}
		if u.Scheme != scheme {
			continue
		}
		if h == host || (u.Port() == "" && scheme == "https" && h == host+":443") {
			return true
		}
	}
	return false
}

// Progress is one step of a clone, as git reports it.
type Progress struct {
	Phase   string `json:"phase"`             // "Receiving objects", ...
	Percent int    `json:"percent,omitempty"` // of the phase, -1 unknown
	Line    string `json:"line"`
}

// CloneResult describes a finished clone.
type CloneResult struct {
	Commit string `json:"commit,omitempty"`
	Branch string `json:"branch,omitempty"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
}

var progressLine = regexp.MustCompile(`^(?:remote: )?([A-Za-z ]+):\s+(\d+)%`)

// Clone runs `git clone` in session id's sandbox into its empty workspace
// dst: the network is on only for a URL source; a local source is mounted
// read-only. progress receives git's progress lines. On failure the
// workspace is emptied again.
func (m *Manager) Clone(ctx context.Context, id, dst string, src CloneSource, progress func(Progress)) (CloneResult, error) {
	ctx, cancel := context.WithTimeout(ctx, CloneTimeout)
	defer cancel()
	from := src.URL
	var ro []string
	var local []string
	if src.Local != "" {
		from, ro = src.Local, []string{src.Local}
		// The source belongs to another user than the sandbox's; the
		// upload side checks ownership too, and does not see -c options.
		local = []string{"--upload-pack", "git -c safe.directory=* upload-pack"}
	}
	args := []string{
		// Only the transports we allow; never run anything the remote names.
		"-c", "protocol.allow=never", "-c", "protocol.https.allow=always",
		"-c", "protocol.http.allow=always", "-c", "protocol.file.allow=always",
		"-c", "http.followRedirects=false", "-c", "credential.helper=",
		"-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*",
		"clone", "--progress", "--no-hardlinks",
	}
	args = append(append(args, local...), "--", from, ".")
	uid, gid := identity(dst)
	scratch, err := m.scratchDir(id, uid, gid)
	if err != nil {
		return CloneResult{}, err
	}
	egress := ""
	if src.URL != "" {
		// Through the egress proxy, which also allows the git host the
		// admin allowed (it may be an internal one).
		u, err := url.Parse(src.URL)
		if err != nil {
			return CloneResult{}, err
		}
		if egress, err = m.egressSocket(ctx, id, []string{u.Host}); err != nil {
			return CloneResult{}, err
		}
	}
	cmd, err := m.d.Sandbox.Command(sandbox.Process{
		Path: "git", Args: args, Workspace: dst, Scratch: scratch, ReadOnly: ro,
		Egress: egress, UID: uid, GID: gid,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false"},
		// Under the session's caps; no file past the workspace quota.
		Group: id, MaxFileSize: uint64(m.quota()),
	})
	if err != nil {
		return CloneResult{}, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return CloneResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return CloneResult{}, fmt.Errorf("start git: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	last := readProgress(stderr, progress)
	werr := cmd.Wait()
	if werr != nil {
		_ = m.Empty(dst)
		if ctx.Err() != nil {
			return CloneResult{}, fmt.Errorf("clone %s: %w", src, context.Cause(ctx))
		}
		msg := strings.TrimSpace(last)
		if msg == "" {
			msg = werr.Error()
		}
		return CloneResult{}, fmt.Errorf("clone %s failed: %s", src, msg)
	}
	return m.describeClone(ctx, id, dst, uid, gid, scratch), nil
}

// readProgress splits git's stderr on \r and \n, reports progress and
// returns the last non-progress lines (the error, on failure).
func readProgress(r io.Reader, progress func(Progress)) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64*1024)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	var tail []string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		p := Progress{Line: line, Percent: -1}
		if mm := progressLine.FindStringSubmatch(line); mm != nil {
			p.Phase = strings.TrimSpace(mm[1])
			p.Percent, _ = strconv.Atoi(mm[2])
		} else {
			tail = append(tail, line)
			if len(tail) > 4 {
				tail = tail[1:]
			}
		}
		if progress != nil {
			progress(p)
		}
	}
	_, _ = io.Copy(io.Discard, r)
	return strings.Join(tail, "\n")
}

// describeClone reads the checked-out commit and counts the files.
func (m *Manager) describeClone(ctx context.Context, id, dst string, uid, gid int, scratch string) CloneResult {
	var res CloneResult
	if cmd, err := m.d.Sandbox.Command(sandbox.Process{
		Path: "git", Args: []string{"-c", "safe.directory=*", "rev-parse", "HEAD", "--abbrev-ref", "HEAD"},
		Workspace: dst, WorkspaceReadOnly: true, Scratch: scratch, UID: uid, GID: gid,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"},
	}); err == nil {
		if out, err := cmd.Output(); err == nil {
			f := strings.Fields(string(out))
			if len(f) > 0 {
				res.Commit = f[0]
			}
			if len(f) > 1 && f[1] != "HEAD" {
				res.Branch = f[1]
			}
		}
	}
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || ctx.Err() != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			res.Files++
			if fi, err := d.Info(); err == nil {
				res.Bytes += fi.Size()
			}
		}
		return nil
	})
	return res
}

// Empty removes everything inside dir, keeping dir itself (a failed clone
// or copy must not look like a workspace).
func (m *Manager) Empty(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}
