# Scenario 5, serial log (PENDING: needs `log.serial`): crier logs to /dev/ttyS1 as well as to
# stderr; the host keeps what arrives on ttyS1 in RUN/ttyS1.log (5-serial-log.check.py).
crier_config "log.serial = /dev/ttyS1"
crier_start
sleep 1
crier_stop
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
