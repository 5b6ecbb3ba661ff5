# Scenario 12, clock steps (issue 35 item 1): a Pi has no RTC; its clock steps when NTP syncs
# (often months forward) or someone runs date -s. crier runs with signed orders (server.key)
# and no NTP in the guest (timesyncd's flag absent: the unsynchronized rule, docs/security.md).
# Orders flow while the guest's wall clock is stepped with `date -s`: order 1 before any step;
# order 2 sent, then the clock stepped +1 year while it is synthesized and said; order 3 sent,
# then the clock stepped back to 3 hours behind the true time; order 4 on that clock; order 5
# after the clock is set right again. Each must be said once and acked `spoken` once (host check
# on host.out), none rejected `stale`; the log notes each step once with its size.
# vm-timeout: 420
L=$RESULTS/crier.log
YEAR=31536000
count() { grep -cE -- "$2" "$1" || true; }
crier_config "status.on_start = off" "status.on_link_up = off" "state.path = /tmp/crier-state" \
  "server.key = 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
[ ! -e /run/systemd/timesync/synchronized ] || fail "the guest says its clock is NTP-synchronized; this scenario tests the unsynchronized rule"
T0=$(date +%s)   # the guest's clock at start (QEMU's RTC: the host's time)
say "guest clock at start: $(date -u +%FT%TZ)"
CRIER_LOG=$L crier_start
# order N: sent through the host's order-sim; waits for its ack line there, returns its id.
order() {
  ctl_send stdin "$1"
  ctl_expect "order id=[^ ]+ kind=new_customer number=$1\b" 30 || { fail "order-sim did not send order $1"; return 1; }
  ID=$(sed -n 's/.*order id=\([^ ]*\) .*/\1/p' <<<"$CTL_LINE")
  say "order $1 sent: $ID"
}
acked() {
  ctl_expect "ack id=$ID status=" 120 || { fail "no ack for $ID within 120 s"; return 1; }
  say "host: $CTL_LINE"
  [[ $CTL_LINE == *"status=spoken"* ]] || fail "order $ID acked: $CTL_LINE"
}
step_to() {  # step_to UNIX_SECONDS WHY
  date -s "@$1" > /dev/null || fail "date -s @$1 failed"
  say "clock stepped ($2): now $(date -u +%FT%TZ)"
}

order 11 && acked
# +1 year while order 12 is being synthesized and said.
order 12
wait_log "$L" "INFO alert: saying ids=$ID" 60 || fail "order 12 not begun"
step_to $(( $(date +%s) + YEAR )) "+1 year, order 12 playing"
acked
# Back to 3 hours behind the true time while order 13 plays.
order 13
wait_log "$L" "INFO alert: saying ids=$ID" 60 || fail "order 13 not begun"
step_to $(( $(date +%s) - YEAR - 3 * 3600 )) "-1 year -3 h, order 13 playing"
acked
# On that clock.
order 14 && acked
# And set right again (what NTP would do), an order after it.
step_to $(( $(date +%s) + 3 * 3600 )) "+3 h, the true time again"
order 15 && acked
sleep 6  # the idle flush notes a step even without a log line
kill -0 "$CRIER_PID" || fail "crier died"
crier_stop
date -s "@$(( T0 + SECONDS ))" > /dev/null || true

say "step notes: $(grep -c 'NOTICE clock: wall clock stepped by' "$L")"
grep 'NOTICE clock: wall clock stepped by' "$L" | sed 's/^/  /'
# date -s @SECONDS drops the fraction: each step is its size to within a second.
[ "$(count "$L" 'NOTICE clock: wall clock stepped by \+315(35|36)[0-9]{3}\.[0-9] s')" = 1 ] || fail "the +1 year step is not noted once"
[ "$(count "$L" 'NOTICE clock: wall clock stepped by -315(46|47)[0-9]{3}\.[0-9] s')" = 1 ] || fail "the -1 year -3 h step is not noted once"
[ "$(count "$L" 'NOTICE clock: wall clock stepped by \+10(79|80)[0-9]\.[0-9] s')" = 1 ] || fail "the +3 h step is not noted once"
[ "$(count "$L" 'NOTICE clock: wall clock stepped by')" = 3 ] || fail "expected 3 step notes"
n=$(count "$L" 'INFO alert: spoken id=')
[ "$n" = 5 ] || fail "expected 5 'alert: spoken' lines, got $n"
grep -E 'reason=stale|status=rejected|order rejected' "$L" && fail "an order was rejected"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
