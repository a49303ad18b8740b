#!/usr/bin/env bash
# startmem.sh: start time and idle memory of built servers on an existing
# data directory (docs/performance.md, "Start and idle memory").
#
#   go build -o /tmp/harness ./cmd/web
#   scripts/startmem.sh /tmp/harness [/tmp/harness-other ...]
#
# For each binary a data directory with user admin and one API token is
# made once by the binary itself (`user add`, `token create`: the schema is
# that binary's), then started once uncounted. Then RUNS (11) rounds start
# every binary in turn (interleaved, so that load from elsewhere hits them
# alike), each on a fresh copy of its directory, from that directory, and
# measure:
#   ready_ms   exec until GET /readyz answers 200, polled every POLL_MS (20)
#   log_ms     the server's own "ready_in" (app.New, Start and listen)
#   cpu_ms     utime+stime of the server (/proc/<pid>/stat, 10 ms steps) at
#              IDLE_S (5) s after ready
#   rss_kb     VmRSS at IDLE_S s after ready, and its parts anon_kb
#              (RssAnon) and file_kb (RssFile: the binary's mapped pages);
#              hwm_kb is VmHWM (the peak) then
# It prints each run, then per binary the median and min-max of each figure.
#
# RssFile depends on how the binary sits in the page cache: a freshly
# linked binary is cached in large folios, and a fault maps a whole folio,
# so nearly all of it counts; read back from disk, only what start touches
# (and its neighbours) does. So each binary is first dropped from the page
# cache (fsync, then posix_fadvise DONTNEED; KEEP_CACHE=1 skips it), and the
# uncounted start reads it back: every binary is then measured alike.
#
# Environment: RUNS, POLL_MS, IDLE_S, PORT (18097), KEEP_CACHE; the model
# route variables (OPENAI_BASE_URL...) pass through, unset the server uses
# its offline demo model.
set -euo pipefail
(($# > 0)) || { echo "usage: startmem.sh BINARY [BINARY...]" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bins=()
for b in "$@"; do
  b=$(readlink -f "$b")
  n=${#bins[@]}
  mkdir -p "$work/template$n"
  echo startmem-password | HARNESS_DATA_DIR=$work/template$n "$b" user add admin --admin >/dev/null
  HARNESS_DATA_DIR=$work/template$n "$b" token create admin --name startmem >/dev/null 2>&1
  bins+=("$b")
done
export WORK=$work RUNS=${RUNS:-11} PORT=${PORT:-18097} POLL_MS=${POLL_MS:-20} IDLE_S=${IDLE_S:-5} KEEP_CACHE=${KEEP_CACHE:-0}
exec python3 - "${bins[@]}" <<'PY'
import os, re, shutil, signal, statistics, subprocess, sys, time, urllib.request

bins, W = sys.argv[1:], os.environ["WORK"]
runs, port = int(os.environ["RUNS"]), os.environ["PORT"]
poll, idle = int(os.environ["POLL_MS"]) / 1000, float(os.environ["IDLE_S"])
tck = os.sysconf("SC_CLK_TCK")
keys = [("ready_ms", "ms"), ("log_ms", "ms"), ("cpu_ms", "ms"), ("rss_kb", "kB"), ("anon_kb", "kB"),
        ("file_kb", "kB"), ("hwm_kb", "kB")]


def status(pid, key):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(key + ":"):
            return int(line.split()[1])


def cpu_ms(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000 / tck


def start(n, tag):
    data = "%s/data%d-%s" % (W, n, tag)
    shutil.copytree("%s/template%d" % (W, n), data)
    env = dict(os.environ, HARNESS_DATA_DIR=data, HARNESS_ADDR="127.0.0.1:" + port)
    logf = open(data + ".log", "w")
    t0 = time.monotonic()
    p = subprocess.Popen([bins[n]], cwd=data, env=env, stdout=logf, stderr=subprocess.STDOUT)
    ready = None
    while time.monotonic() - t0 < 60:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%s/readyz" % port, timeout=2) as r:
                if r.status == 200:
                    ready = (time.monotonic() - t0) * 1000
                    break
        except Exception:
            pass
        if p.poll() is not None:
            raise SystemExit("%s exited early, see %s" % (bins[n], logf.name))
        time.sleep(poll)
    if ready is None:
        p.kill()
        raise SystemExit("%s did not answer /readyz" % bins[n])
    time.sleep(idle)
    row = dict(ready_ms=ready, cpu_ms=cpu_ms(p.pid), rss_kb=status(p.pid, "VmRSS"), anon_kb=status(p.pid, "RssAnon"),
               file_kb=status(p.pid, "RssFile"), hwm_kb=status(p.pid, "VmHWM"))
    p.send_signal(signal.SIGTERM)
    p.wait(30)
    logf.close()
    m = re.search(r"ready_in=([0-9.]+)(ms|s)\b", open(data + ".log").read())
    row["log_ms"] = float(m.group(1)) * (1000 if m.group(2) == "s" else 1) if m else float("nan")
    shutil.rmtree(data, ignore_errors=True)
    return row


for n, b in enumerate(bins):
    if os.environ["KEEP_CACHE"] != "1":
        fd = os.open(b, os.O_RDONLY)
        os.fsync(fd)  # a freshly linked binary's pages may be dirty, and dirty pages are not dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    start(n, "warm")  # reads the binary back, warms the data directory: not counted

rows = [[] for _ in bins]
for i in range(runs):
    for n, b in enumerate(bins):
        r = start(n, str(i))
        rows[n].append(r)
        print("run %2d %s: ready %6.1f ms  log %5.1f ms  cpu %4.0f ms  rss %6d kB (anon %6d, file %6d)  hwm %6d kB"
              % (i + 1, os.path.basename(b), r["ready_ms"], r["log_ms"], r["cpu_ms"], r["rss_kb"], r["anon_kb"],
                 r["file_kb"], r["hwm_kb"]), flush=True)
for n, b in enumerate(bins):
    print("== %s (%d runs): median (min-max)" % (b, runs))
    for k, unit in keys:
        xs = [r[k] for r in rows[n]]
        print("  %-8s %8.1f %s  (%.1f-%.1f)" % (k, statistics.median(xs), unit, min(xs), max(xs)))
PY
