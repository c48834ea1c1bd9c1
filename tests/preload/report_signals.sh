#!/bin/sh
# SPDX-License-Identifier: MIT
# report_signals.sh TXKIT - `txkit run --report` runs CMD as its child; a
# SIGTERM sent to txkit must reach CMD (it lived on, its parent gone), and a
# CMD killed by a signal must make txkit die of it too (its callers saw exit
# status 143, not a death by SIGTERM). python3 tells the two apart.
set -u
txkit=$1
tmp=${TMPDIR:-/tmp}/txkit-rsig-$$
trap 'rm -f "$tmp".*' EXIT
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
fail=0
python3 - "$txkit" "$tmp" <<'PY' || fail=1
import os, signal, subprocess, sys, time
txkit, tmp = sys.argv[1], sys.argv[2]
bad = 0
# 1. CMD killed by SIGTERM: txkit dies of SIGTERM (returncode -15)
r = subprocess.run([txkit, "run", "--report=" + tmp + ".r1", "--", "sh", "-c", "kill -TERM $$"])
if r.returncode != -signal.SIGTERM:
    print("FAIL: CMD killed by SIGTERM: txkit's returncode %d, expected %d" % (r.returncode, -signal.SIGTERM))
    bad = 1
# 2. a plain exit status still comes through
r = subprocess.run([txkit, "run", "--report=" + tmp + ".r2", "--", "sh", "-c", "exit 7"])
if r.returncode != 7:
    print("FAIL: CMD exit 7: txkit's returncode %d" % r.returncode)
    bad = 1
# 3. SIGTERM to txkit alone reaches CMD, which then dies of it
mark = "30.%d" % os.getpid()  # a sleep of our own to look for
p = subprocess.Popen([txkit, "run", "--report=" + tmp + ".r3", "--", "sleep", mark])
time.sleep(0.5)
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(timeout=20)
except subprocess.TimeoutExpired:
    p.kill()
    print("FAIL: txkit still waits 20 s after SIGTERM: CMD did not get it")
    sys.exit(1)
if rc != -signal.SIGTERM:
    print("FAIL: SIGTERM to txkit: returncode %d, expected %d" % (rc, -signal.SIGTERM))
    bad = 1
time.sleep(0.2)
left = subprocess.run(["pgrep", "-f", "sleep " + mark], capture_output=True, text=True).stdout.split()
if left:
    print("FAIL: SIGTERM to txkit: CMD (sleep %s) lives on without it, pid %s" % (mark, " ".join(left)))
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    bad = 1
if not bad:
    print("ok: CMD's death by SIGTERM is txkit's, exit 7 is 7, SIGTERM to txkit reaches CMD")
sys.exit(bad)
PY
exit $fail
