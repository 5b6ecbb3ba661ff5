# Scenario 5, serial log: crier logs to /dev/ttyS1 (`log.serial`, 115200 8N1) as well as to
# stderr; the host keeps what arrives on ttyS1 in RUN/ttyS1.log. A button press and an order
# while it runs make log lines of real events; the host check (5-serial-log.check.py) wants
# every line crier wrote to stderr on the serial port too, in order, complete, none dropped.
# vm-timeout: 240
crier_config "log.serial = /dev/ttyS1" "log.serial_baud = 115200" \
  "status.on_start = off" "status.on_link_up = off" "state.path = /tmp/crier-state"
crier_start
stty -F /dev/ttyS1 -a | head -n1 | sed 's/^/ttyS1: /'
python3 "$REPO/scripts/vm/lib/press.py" --sysfs "$GPIO_SYSFS" --log "$RESULTS/presses.jsonl" --tag down 27:0.1:0.3
wait_log "$RESULTS/crier.log" 'button volume_down: press' 15 || fail "no 'button volume_down: press' after pulling GPIO27"
ctl_send stdin 42
wait_log "$RESULTS/crier.log" 'INFO alert: spoken id=' 60 || fail "the order was not spoken"
ctl_expect 'ack .*status=spoken' 20 || fail "no 'ack ... status=spoken' from order-sim"
sleep 1
crier_stop
sleep 1   # the last lines through the UART (115200 baud: ~11 KB/s)
say "crier wrote $(grep -c . "$RESULTS/crier.log") log lines to stderr"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
