"""Shared helpers for the board-support tests (run: /usr/bin/python3 -m pytest Tests/board).

Hardware-free: nothing here needs a Pi, a sound card, a GPIO chip or a running systemd.
Tools the tests need are installed through apt when missing (CI is a fresh Debian 12).
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                       capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


def ensure_packages(*pkgs):
    """apt-get install the Debian packages that are missing (idempotent, waits for the lock)."""
    missing = [p for p in pkgs if not _installed(p)]
    if not missing:
        return
    prefix = []
    if os.geteuid() != 0:
        if not shutil.which("sudo"):
            pytest.fail("needs Debian packages %s and is not root (no sudo)" % " ".join(missing))
        prefix = ["sudo"]
    apt = prefix + ["apt-get", "-o", "DPkg::Lock::Timeout=600"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = apt + ["install", "-y", "-qq", "--no-install-recommends", *missing]
    r = subprocess.run(install, capture_output=True, text=True, env=env)
    if r.returncode != 0:   # a fresh machine may have no package lists yet
        subprocess.run(apt + ["update", "-qq"], capture_output=True, env=env)
        r = subprocess.run(install, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        pytest.fail("apt-get install %s failed:\n%s" % (" ".join(missing), r.stderr))


CONF_LINE = re.compile(r"^(#?)([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\s*=\s*(.*?)\s*$")


def read_conf(text):
    """key -> value from a crier.conf: active `key = value` lines, and `#key = value` lines
    (a documented default, the form `crier config --example` prints); active lines win.
    Prose comments start with "# " and are not keys."""
    active, documented = {}, {}
    for line in text.splitlines():
        m = CONF_LINE.match(line.strip())
        if m:
            (documented if m.group(1) else active)[m.group(2)] = m.group(3)
    return {**documented, **active}


def find_crier():
    """The crier binary to test with: $CRIER_BIN, else a SwiftPM build in .build/ (or None)."""
    env = os.environ.get("CRIER_BIN")
    if env:
        p = Path(env)
        if not (p.is_file() and os.access(p, os.X_OK)):
            pytest.fail("CRIER_BIN=%s is not an executable file" % env)
        return p
    for sub in ("debug", "release"):
        p = ROOT / ".build" / sub / "crier"
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


@pytest.fixture(scope="session")
def crier():
    p = find_crier()
    if p is None:
        pytest.skip("no crier binary: set CRIER_BIN or run `swift build` first")
    return p
