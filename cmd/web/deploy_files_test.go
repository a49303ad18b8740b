package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readDeploy reads a file of the repository from cmd/web.
func readDeploy(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The deployment files name the same things: the replicas nginx proxies
// to are the compose file's replica services; the address the replicas
// trust is nginx's in the compose network; the capabilities the
// containers get are the systemd unit's bounding set (the one
// TestServiceUnit found the sandbox needs), in the compose file and the
// Dockerfile's instructions alike. Where Docker Compose is installed the
// compose file is checked by it too.
func TestDeployFilesAgree(t *testing.T) {
	t.Parallel()
	nginx := readDeploy(t, "deploy/nginx.conf")
	compose := readDeploy(t, "deploy/compose.yaml")
	dockerfile := readDeploy(t, "Dockerfile")

	var upstream []string
	for _, m := range regexp.MustCompile(`(?m)^\s*server (harness-\d+):8080\b`).FindAllStringSubmatch(nginx, -1) {
		upstream = append(upstream, m[1])
	}
	var replicas []string
	for _, m := range regexp.MustCompile(`(?m)^  (harness-\d+):\n    <<: \*replica\n    hostname: (harness-\d+)$`).FindAllStringSubmatch(compose, -1) {
		if m[1] != m[2] {
			t.Errorf("compose service %s has hostname %s: its advertised address would not resolve", m[1], m[2])
		}
		replicas = append(replicas, m[1])
	}
	if len(upstream) != 3 || !slices.Equal(upstream, replicas) {
		t.Errorf("nginx upstream %v, compose replicas %v: want the same three", upstream, replicas)
	}

	ip := regexp.MustCompile(`ipv4_address: (\S+)`).FindStringSubmatch(compose)
	trusted := regexp.MustCompile(`HARNESS_TRUSTED_PROXIES: (\S+)`).FindStringSubmatch(compose)
	if ip == nil || trusted == nil || trusted[1] != ip[1]+"/32" {
		t.Errorf("compose: nginx at %v, replicas trust %v", ip, trusted)
	}

	unit := unitSettings(t, unitPath)
	var caps []string
	for _, c := range strings.Fields(one(t, unit, "CapabilityBoundingSet")) {
		caps = append(caps, strings.TrimPrefix(c, "CAP_"))
	}
	added := regexp.MustCompile(`cap_add: \[([^\]]*)\]`).FindStringSubmatch(compose)
	if added == nil || !slices.Equal(strings.Split(added[1], ", "), caps) {
		t.Errorf("compose cap_add %v, the unit's bounding set %v", added, caps)
	}
	var docker []string
	for _, m := range regexp.MustCompile(`--cap-add (\w+)`).FindAllStringSubmatch(dockerfile, -1) {
		docker = append(docker, m[1])
	}
	if !slices.Equal(docker, caps) {
		t.Errorf("the Dockerfile says --cap-add %v, the unit's bounding set is %v", docker, caps)
	}
	for _, opt := range []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} {
		if !strings.Contains(compose, "- "+opt) || !strings.Contains(dockerfile, opt) {
			t.Errorf("security option %s missing from the compose file or the Dockerfile", opt)
		}
	}

	// Docker Compose's own check, with the variables the file requires.
	var check *exec.Cmd
	switch {
	case exec.Command("docker", "compose", "version").Run() == nil:
		check = exec.Command("docker", "compose", "-f", "../../deploy/compose.yaml", "config", "-q")
	default:
		if path, err := exec.LookPath("docker-compose"); err == nil {
			check = exec.Command(path, "-f", "../../deploy/compose.yaml", "config", "-q")
		}
	}
	if check == nil {
		t.Log("!!! deploy/compose.yaml not checked by Docker Compose: neither `docker compose` nor docker-compose is installed !!!")
		return
	}
	check.Env = append(os.Environ(), "HARNESS_SECRET_KEY=test", "POSTGRES_PASSWORD=test")
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("%s: %v\n%s", strings.Join(check.Args, " "), err, out)
	}
}
