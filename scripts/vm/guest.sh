#!/bin/bash
# Guest-side driver, run by the VM's init in a chroot of the host root: sets up the simulated
# hardware every scenario shares, runs scripts/vm/scenarios/$SCENARIO.sh, records the exit code
# and timings in $RESULTS.
set -uo pipefail
source "$REPO/scripts/vm/lib/guest-lib.sh"
# Which libgpiod crier runs with (vm-test.sh CRIER_VM_GPIOD=1|2): for v2 the library comes from
# the bookworm-backports prefix (scripts/gpiod2-prefix.sh) on the host root, by LD_LIBRARY_PATH.
# Its soname (libgpiod.so.3) differs from the host's libgpiod.so.2, so the v1 tools the
# scenarios use to watch the kernel (gpioinfo, gpiomon) are unaffected.
CRIER_VM_GPIOD=$(sed -n "s/^CRIER_VM_GPIOD='\(.*\)'$/\1/p" "$RESULTS/job.env")
CRIER_VM_LD_LIBRARY_PATH=$(sed -n "s/^CRIER_VM_LD_LIBRARY_PATH='\(.*\)'$/\1/p" "$RESULTS/job.env")
export CRIER_VM_GPIOD
# crier-sim (the order server; 8-wifi runs it in the guest), over the repo share like CRIER_BIN
CRIER_SIM_BIN=$(sed -n "s/^CRIER_SIM_BIN='\(.*\)'$/\1/p" "$RESULTS/job.env")
export CRIER_SIM_BIN
if [ -n "$CRIER_VM_LD_LIBRARY_PATH" ]; then export LD_LIBRARY_PATH=$CRIER_VM_LD_LIBRARY_PATH; fi
if [ -n "$CRIER_VM_GPIOD" ] && [ -x "$CRIER_BIN" ]; then
  echo "crier-vm: libgpiod v$CRIER_VM_GPIOD: $(ldd "$CRIER_BIN" | grep -o 'libgpiod[^ ]* => [^ ]*' | tr '\n' ' ')" | tee "$RESULTS/gpiod.txt"
fi
t_start=$(uptime_s)
echo "boot_s=$t_start" > "$RESULTS/timing"

setup_gpio_sim || { echo 97 > "$RESULTS/rc"; exit 97; }

echo "crier-vm: scenario $SCENARIO starts at uptime $t_start"
( set -e; cd /tmp; source "$REPO/scripts/vm/scenarios/$SCENARIO.sh" )
rc=$?
t_end=$(uptime_s)
echo "scenario_s=$(awk -v a="$t_start" -v b="$t_end" 'BEGIN{printf "%.1f", b-a}')" >> "$RESULTS/timing"
echo "$rc" > "$RESULTS/rc"
echo "crier-vm: scenario $SCENARIO exit $rc"
exit "$rc"
