"""Runs a program under the parts of crier.service's sandbox that can be reproduced without
systemd as PID 1: the unit's own SystemCallFilter= (expanded by `systemd-analyze
syscall-filter`, so systemd's definition of each @group), SystemCallErrorNumber=,
MemoryDenyWriteExecute=, RestrictAddressFamilies=, RestrictNamespaces=, RestrictRealtime=
and NoNewPrivileges=, implemented with seccomp the way systemd does (python3-seccomp).

Not reproduced here: the mount namespace (ProtectSystem=, PrivateTmp=, ...), the device
cgroup (DeviceAllow=) and the user switch; those are exercised when the image boots (image/).
"""
import errno
import re
import subprocess

UNIT_FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_PACKET": 17}
AF_MAX = 46
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (clone and unshare)
CLONE_NEW = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000]
CLONE_NEWTIME = 0x80   # unshare only: in clone()'s flags the low byte is the exit signal
PROT_WRITE, PROT_EXEC, SHM_EXEC = 0x2, 0x4, 0o100000
SCHED_FIFO, SCHED_RR = 1, 2


def syscall_groups():
    out = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager"],
                         capture_output=True, text=True, check=True).stdout
    groups, cur = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            cur = groups.setdefault(line.strip(), [])
        elif line.startswith("    ") and cur is not None and not line.strip().startswith("#"):
            cur.append(line.strip())
        elif not line.strip() or line.startswith("#"):
            cur = None if line.startswith("#") else cur
    return groups


def expand(item, groups, seen=None):
    seen = seen if seen is not None else set()
    if not item.startswith("@"):
        return {item}
    if item in seen:
        return set()
    seen.add(item)
    out = set()
    for m in groups[item]:
        out |= expand(m, groups, seen)
    return out


def unit_syscalls(unit_text):
    """The allow-list a unit's SystemCallFilter= lines produce (systemd semantics: the first
    line decides allow- or deny-list mode; later `~` lines remove, plain lines add)."""
    groups = syscall_groups()
    allowed = None
    for value in re.findall(r"^SystemCallFilter=(.*)$", unit_text, re.M):
        deny = value.startswith("~")
        names = set()
        for item in value.lstrip("~").split():
            names |= expand(item, groups)
        if allowed is None:
            assert not deny, "test expects an allow-list unit"
            allowed = set(expand("@default", groups)) | names
        elif deny:
            allowed -= names
        else:
            allowed |= names
    assert allowed, "no SystemCallFilter= in the unit"
    return allowed


def setting(unit_text, key):
    m = re.findall(r"^%s=(.*)$" % key, unit_text, re.M)
    return m[-1].strip() if m else None


def preexec(unit_text):
    """A preexec_fn for subprocess that installs the unit's seccomp sandbox in the child."""
    import seccomp   # python3-seccomp
    allowed = unit_syscalls(unit_text)
    err = setting(unit_text, "SystemCallErrorNumber")
    errnum = getattr(errno, err) if err else None
    families = set((setting(unit_text, "RestrictAddressFamilies") or "").split())
    mdwe = setting(unit_text, "MemoryDenyWriteExecute") == "yes"
    nons = setting(unit_text, "RestrictNamespaces") == "yes"
    rt = setting(unit_text, "RestrictRealtime") == "yes"

    def install():
        # 1. the allow-list: everything else fails (EPERM) or kills (no ErrorNumber)
        f = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errnum) if errnum else seccomp.KILL_PROCESS)
        for name in sorted(allowed):
            try:
                f.add_rule(seccomp.ALLOW, name)
            except (RuntimeError, ValueError, OSError):
                pass   # not a syscall on this architecture
        # 2. the argument filters systemd adds for the other settings
        g = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        A, MEQ, EQ = seccomp.Arg, seccomp.MASKED_EQ, seccomp.EQ
        if mdwe:
            both = PROT_WRITE | PROT_EXEC
            g.add_rule(seccomp.ERRNO(errno.EPERM), "mmap", A(2, MEQ, both, both))
            g.add_rule(seccomp.ERRNO(errno.EPERM), "mprotect", A(2, MEQ, PROT_EXEC, PROT_EXEC))
            g.add_rule(seccomp.ERRNO(errno.EPERM), "pkey_mprotect", A(2, MEQ, PROT_EXEC, PROT_EXEC))
            g.add_rule(seccomp.ERRNO(errno.EPERM), "shmat", A(2, MEQ, SHM_EXEC, SHM_EXEC))
        if families:
            ok = {UNIT_FAMILIES[f] for f in families}
            for fam in range(AF_MAX):
                if fam not in ok:
                    g.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", A(0, EQ, fam))
        if nons:
            for flag in CLONE_NEW:
                g.add_rule(seccomp.ERRNO(errno.EPERM), "unshare", A(0, MEQ, flag, flag))
                g.add_rule(seccomp.ERRNO(errno.EPERM), "clone", A(0, MEQ, flag, flag))
            g.add_rule(seccomp.ERRNO(errno.EPERM), "unshare", A(0, MEQ, CLONE_NEWTIME, CLONE_NEWTIME))
            g.add_rule(seccomp.ERRNO(errno.EPERM), "setns")
            g.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")   # glibc falls back to clone
        if rt:
            for pol in (SCHED_FIFO, SCHED_RR):
                g.add_rule(seccomp.ERRNO(errno.EPERM), "sched_setscheduler", A(1, MEQ, 0xff, pol))
        g.load()   # the argument filter first: it needs prctl, which the allow-list may deny
        f.load()

    return install
