#!/bin/bash
# Guest-side driver, run by the VM's init in a chroot of the host root: sets up the simulated
# hardware every scenario shares, runs scripts/vm/scenarios/$SCENARIO.sh, records the exit code
# and timings in $RESULTS.
set -uo pipefail
source "$REPO/scripts/vm/lib/guest-lib.sh"
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
