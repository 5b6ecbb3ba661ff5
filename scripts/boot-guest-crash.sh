# Sourced by scripts/boot-test.sh and scripts/boot-test-arm64.sh.
#
# A crash of the guest's own kernel (an oops or panic on the serial console) is neither crier's
# fault nor the image's: under QEMU's TCG it has come from the emulator (an "int3" oops at a
# static branch the kernel had just patched, on the multi-threaded TCG, docs/image.md). The boot
# tests stop waiting as soon as one shows, and retry the whole test once; a second crash fails.

# Kernel lines only: their printk timestamp comes first.
GUEST_CRASH_RE='\] (Kernel panic - not syncing|Oops: |BUG: |general protection fault)'

# guest_crash FILE...: the first crash line in the serial logs; false when there is none.
guest_crash() {
  local f
  for f in "$@"; do
    [ -f "$f" ] || continue
    tr -d '\r' < "$f" | grep -m1 -E "$GUEST_CRASH_RE" && return 0
  done
  return 1
}

# retry_on_guest_crash SCRIPT ARGS...: runs SCRIPT as attempt 1; exit code 75 from it (the guest
# kernel crashed) gives a second and final attempt. Returns at once inside an attempt.
retry_on_guest_crash() {
  [ -z "${BOOT_TEST_ATTEMPT:-}" ] || return 0
  local rc=0
  BOOT_TEST_ATTEMPT=1 bash "$@" || rc=$?
  if [ "$rc" = 75 ]; then
    echo "boot-test: FLAKY: the guest kernel crashed in attempt 1 (its serial log above); the whole test once more" >&2
    BOOT_TEST_ATTEMPT=2 exec bash "$@"
  fi
  exit "$rc"
}

# guest_crash_exit FILE...: in fail(): when the guest kernel crashed, say so, and in attempt 1
# exit 75 so that retry_on_guest_crash runs the test again.
guest_crash_exit() {
  local c
  c="$(guest_crash "$@")" || return 0
  echo "boot-test: the guest kernel crashed (not crier, not the image's userspace): $c" >&2
  [ "${BOOT_TEST_ATTEMPT:-}" != 1 ] || exit 75
}
