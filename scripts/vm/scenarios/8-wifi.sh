# Scenario 8, Wi-Fi (issue 19) against a real kernel: mac80211_hwsim with two radios, the box's
# wlan0 in the root namespace and the access point's radio moved into the namespace "ap", so
# every packet between them crosses the simulated air. In "ap": hostapd (WPA2-PSK, or with
# CRIER_VM_WIFI_SAE=1 WPA3-SAE), busybox udhcpd, and `crier-sim order-sim` bound to the AP's
# address. On the box: the supplicant file that `crier wifi-config` generates from crier.conf,
# wpa_supplicant on wlan0, busybox udhcpc (the image uses systemd-networkd; here a stand-in
# DHCP client), and `crier run`, which reads the state from the supplicant's ctrl_iface.
#   (a) wrong passphrase: "Wi-Fi password wrong" logged and said within seconds (from the
#       4-way handshake's WRONG_KEY, not a timeout), and the server prompt is not said;
#   (b) right passphrase: associated, DHCP address, "Wi-Fi connected"; `crier status --json`
#       shows SSID, signal in dBm and the address; order 42 from the server over the radio is
#       spoken and acked;
#   (c) AP stopped: Wi-Fi "network not found" said; order 43 queued at the server meanwhile;
#       AP back: reconnected, order 43 delivered over Wi-Fi and acked spoken exactly once.
# The SSID has a space, a quote and UTF-8 and the passphrase a quote and a #: the supplicant
# file then uses the hex SSID and the derived PSK (WpaSupplicantConf), on a real supplicant.
# vm-timeout: 480
set -u
CRIER_VM_WIFI_SAE=$(sed -n "s/^CRIER_VM_WIFI_SAE='\(.*\)'$/\1/p" "$RESULTS/job.env")
W=$RESULTS/wifi
mkdir -p "$W"
LOG=$RESULTS/crier.log
SSID='Crier "Shop" é'
PASS='pa"ss #word-19'
AP_IP=192.168.77.1
count() { grep -c -- "$2" "$1" 2>/dev/null || true; }
elapsed() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN{printf "%.1f", b-a}'; }

# --- the radios -----------------------------------------------------------------------------
for m in $(cat "$RESULTS/wifi-modules/order"); do
  case "$m" in
    virtio.ko|virtio_ring.ko) continue ;;  # already in the VM's initramfs
    mac80211_hwsim.ko) insmod "$RESULTS/wifi-modules/$m" radios=2 || { fail "insmod $m"; exit 1; } ;;
    *) insmod "$RESULTS/wifi-modules/$m" 2>/dev/null || grep -q "^${m%.ko} " /proc/modules || { fail "insmod $m"; exit 1; } ;;
  esac
done
for i in $(seq 50); do [ -e /sys/class/net/wlan1 ] && break; sleep 0.1; done
[ -e /sys/class/net/wlan0 ] && [ -e /sys/class/net/wlan1 ] || { fail "mac80211_hwsim made no wlan0/wlan1: $(ls /sys/class/net)"; exit 1; }
ip netns add ap
AP_PHY=$(cat /sys/class/net/wlan1/phy80211/name)
iw phy "$AP_PHY" set netns name ap || { fail "cannot move $AP_PHY into netns ap"; exit 1; }
ip -n ap link set lo up
ip -n ap link set wlan1 up
ip -n ap addr add "$AP_IP/24" dev wlan1
say "radios: box wlan0 ($(cat /sys/class/net/wlan0/phy80211/name)), AP wlan1 ($AP_PHY) in netns ap"

# --- the access point side --------------------------------------------------------------------
ssid_hex=$(printf '%s' "$SSID" | od -An -tx1 | tr -d ' \n')
{
  echo "interface=wlan1"; echo "driver=nl80211"; echo "ssid2=$ssid_hex"
  echo "hw_mode=g"; echo "channel=6"; echo "country_code=GB"
  echo "ctrl_interface=/tmp/hostapd-ctl"
  echo "wpa=2"; echo "rsn_pairwise=CCMP"
  if [ "${CRIER_VM_WIFI_SAE:-0}" = 1 ]; then
    echo "wpa_key_mgmt=SAE"; echo "ieee80211w=2"; echo "sae_password=$PASS"
  else
    echo "wpa_key_mgmt=WPA-PSK"; echo "wpa_passphrase=$PASS"
  fi
} > /tmp/hostapd.conf
cp /tmp/hostapd.conf "$W/hostapd.conf"
ap_start() {
  ip netns exec ap hostapd -B -P /tmp/hostapd.pid -f "$W/hostapd.log" /tmp/hostapd.conf > "$W/hostapd.out" 2>&1 \
    || { cat "$W/hostapd.out"; fail "hostapd did not start"; return 1; }
}
ap_stop() { kill "$(cat /tmp/hostapd.pid)" 2>/dev/null || true; for i in $(seq 50); do kill -0 "$(cat /tmp/hostapd.pid)" 2>/dev/null || break; sleep 0.1; done; }
ap_start || exit 1
printf 'start 192.168.77.10\nend 192.168.77.20\ninterface wlan1\nlease_file /tmp/udhcpd.leases\noption subnet 255.255.255.0\noption lease 600\n' > /tmp/udhcpd.conf
: > /tmp/udhcpd.leases
ip netns exec ap busybox udhcpd -f /tmp/udhcpd.conf > "$W/udhcpd.log" 2>&1 &
UDHCPD=$!
mkfifo /tmp/order-sim.in
ip netns exec ap "$CRIER_SIM_BIN" order-sim --host "$AP_IP" --port 7700 --every 0 < /tmp/order-sim.in > "$W/order-sim.out" 2> "$W/order-sim.err" &
OSIM=$!
exec {OS_IN}>/tmp/order-sim.in
wait_log "$W/order-sim.out" 'listening' 60 || { fail "order-sim did not listen"; exit 1; }
say "AP up: hostapd ($([ "${CRIER_VM_WIFI_SAE:-0}" = 1 ] && echo WPA3-SAE || echo WPA2-PSK)), udhcpd, order-sim on $AP_IP:7700"

# --- the box ------------------------------------------------------------------------------------
box_config() {  # $1: the passphrase crier.conf gives
  CRIER_VM_SERVER="" crier_config "status.on_start = off" "link.heartbeat = 3" "status.link_down_after = 25" \
    "status.link_down_repeat = 20" "speech.lang = en" \
    "wifi.ssid = '$SSID'" "wifi.psk = '$1'" "wifi.country = gb" "wifi.not_found_after = 5" \
    "server = tcp://$AP_IP:7700"   # after crier_config's own (empty) server line: the last wins
  # crier_start would wait for the slirp server: this scenario starts crier itself
  "$CRIER_BIN" wifi-config --config /tmp/crier.conf --output /tmp/wpa_supplicant.conf 2>> "$W/wifi-config.log" \
    || { cat "$W/wifi-config.log"; fail "crier wifi-config failed"; return 1; }
  grep -v -e '^[[:space:]]*psk=' -e sae_password /tmp/wpa_supplicant.conf > "$W/wpa_supplicant.conf.redacted"
}
supplicant_start() {
  rm -rf /run/wpa_supplicant
  wpa_supplicant -B -i wlan0 -D nl80211 -c /tmp/wpa_supplicant.conf -P /tmp/wpa.pid -f "$W/wpa_supplicant-$1.log" \
    || { fail "wpa_supplicant did not start"; return 1; }
  T_SUPP=$(uptime_s)
}
supplicant_stop() { kill "$(cat /tmp/wpa.pid)" 2>/dev/null || true; for i in $(seq 50); do kill -0 "$(cat /tmp/wpa.pid)" 2>/dev/null || break; sleep 0.1; done; }
cat > /tmp/udhcpc.script <<'SH'
#!/bin/sh
case "$1" in
  deconfig) ip addr flush dev "$interface" ;;
  bound|renew) ip addr flush dev "$interface"; ip addr add "$ip/${mask:-24}" dev "$interface" ;;
esac
SH
chmod +x /tmp/udhcpc.script
start_crier() {
  "$CRIER_BIN" run --config /tmp/crier.conf 2>> "$LOG" &
  CRIER_PID=$!
  wait_log "$LOG" ' INFO runtime: ready' 90 || { tail -n 20 "$LOG"; fail "crier not ready"; return 1; }
}

# --- (a) wrong passphrase -----------------------------------------------------------------------
box_config 'not the password'
grep -q "^[[:space:]]*ssid=$ssid_hex$" /tmp/wpa_supplicant.conf || fail "the supplicant file does not carry the SSID in hex"
ip link set wlan0 up
start_crier || exit 1
supplicant_start a || exit 1
wait_log "$LOG" 'WARN wifi: Wi-Fi password wrong' 60 || fail "no 'WARN wifi: Wi-Fi password wrong' within 60 s of the supplicant start"
T_WRONG=$(elapsed "$T_SUPP")
say "(a) wrong password logged $T_WRONG s after the supplicant started: $(grep 'WARN wifi: Wi-Fi password wrong' "$LOG" | head -n1 | cut -d' ' -f2-)"
grep -q 'WRONG_KEY' "$W/wpa_supplicant-a.log" 2>/dev/null || say "note: the supplicant's own log has no WRONG_KEY line"
wait_log "$LOG" 'INFO runtime: said prompt=wifi_wrong_password' 60 || fail "the wrong-password prompt was not said"
say "(a) said: $(grep 'said prompt=wifi_wrong_password' "$LOG" | head -n1 | cut -d' ' -f2-) ($(elapsed "$T_SUPP") s)"
# The server link has been down since the start: at status.link_down_after (25 s) its prompt is
# due, and while Wi-Fi says what is wrong it must stay quiet (logged as replaced).
wait_log "$LOG" 'order server unreachable .*replaced by the Wi-Fi prompt' 90 \
  || fail "no 'order server unreachable ... replaced by the Wi-Fi prompt' line"
n=$(count "$LOG" 'said prompt=link_down')
[ "$n" = 0 ] || fail "the server's link-down prompt was said $n time(s) while Wi-Fi said the password is wrong"
"$CRIER_BIN" status --config /tmp/crier.conf --json > "$W/status-a.json" 2>&1 || true
grep -q '"state":"wrong_password"' "$W/status-a.json" || fail "crier status does not say wrong_password: $(cat "$W/status-a.json")"
if grep -q 'not the password' "$LOG" "$W/status-a.json"; then fail "the passphrase appears in the log or status"; fi
crier_stop
supplicant_stop

# --- (b) right passphrase -----------------------------------------------------------------------
box_config "$PASS"
grep -q 'sae_password=' /tmp/wpa_supplicant.conf || fail "a passphrase with \" and # should be written as derived psk + hex sae_password"
start_crier || exit 1
busybox udhcpc -i wlan0 -f -t 100 -T 1 -A 2 -s /tmp/udhcpc.script > "$W/udhcpc.log" 2>&1 &
UDHCPC=$!
supplicant_start b || exit 1
wait_log "$LOG" 'INFO wifi: Wi-Fi connected' 90 || { fail "no 'INFO wifi: Wi-Fi connected' within 90 s"; }
say "(b) $(grep 'INFO wifi: Wi-Fi connected' "$LOG" | head -n1 | cut -d' ' -f2-) ($(elapsed "$T_SUPP") s after the supplicant)"
BOX_IP=$(ip -4 -o addr show dev wlan0 | awk '{print $4}' | cut -d/ -f1)
say "(b) wlan0 $BOX_IP; $(iw dev wlan0 link | tr '\n' ' ' | tr -s ' ')"
wait_log "$LOG" 'said prompt=wifi_connected' 60 || fail "'Wi-Fi connected' not said"
wait_log "$W/order-sim.out" 'device connected' 60 || fail "crier did not reach order-sim over Wi-Fi"
say "(b) server: $(grep 'device connected' "$W/order-sim.out" | tail -n1)"
grep 'device connected' "$W/order-sim.out" | tail -n1 | grep -q "addr=$BOX_IP:" || fail "the server saw the box from another address than wlan0's $BOX_IP"
"$CRIER_BIN" status --config /tmp/crier.conf --json > "$W/status-b.json" 2>&1
"$CRIER_BIN" status --config /tmp/crier.conf > "$W/status-b.txt" 2>&1
say "(b) status: $(grep '^wifi:' "$W/status-b.txt")"
grep -q '"state":"online"' "$W/status-b.json" || fail "status: not online"
grep -q "\"ip_address\":\"$BOX_IP\"" "$W/status-b.json" || fail "status: no ip_address $BOX_IP"
grep -Eq '"signal_dbm":-[0-9]+' "$W/status-b.json" || fail "status: no signal in dBm"
grep -q '"ssid":"Crier \\"Shop\\" é"' "$W/status-b.json" || fail "status: wrong SSID: $(cat "$W/status-b.json")"
echo 42 >&$OS_IN
wait_log "$W/order-sim.out" 'ack .*status=spoken' 90 || fail "order 42 not acked spoken over Wi-Fi"
say "(b) $(grep 'ack .*status=spoken' "$W/order-sim.out" | tail -n1)"

# --- (c) AP stopped and back ----------------------------------------------------------------------
ap_stop
T_STOP=$(uptime_s)
wait_log "$LOG" 'WARN wifi: Wi-Fi network not found' 90 || fail "no 'Wi-Fi network not found' within 90 s of the AP stopping"
say "(c) AP stopped; not found logged after $(elapsed "$T_STOP") s"
wait_log "$LOG" 'said prompt=wifi_not_found' 60 || fail "'Wi-Fi network not found' not said"
wait_log "$W/order-sim.out" 'device disconnected' 60 || say "note: the server has not seen the box go yet"
echo 43 >&$OS_IN
sleep 3
spoken_before=$(count "$W/order-sim.out" 'ack .*status=spoken')
ap_start || exit 1
T_BACK=$(uptime_s)
end=$((SECONDS + 120))
until [ "$(count "$LOG" 'INFO wifi: Wi-Fi connected')" -ge 2 ] || ((SECONDS > end)); do sleep 0.5; done
[ "$(count "$LOG" 'INFO wifi: Wi-Fi connected')" -ge 2 ] || fail "not reconnected within 120 s of the AP coming back"
say "(c) AP back; reconnected after $(elapsed "$T_BACK") s"
# Wi-Fi back: the server link gets status.link_down_after to reconnect, so no "server connection
# failed" between "Wi-Fi connected" and "server connected"
end=$((SECONDS + 90))
until [ "$(count "$LOG" 'said prompt=link_up')" -ge 2 ] || ((SECONDS > end)); do sleep 0.5; done
# (from the last "Wi-Fi connected" before the link came up: under TCG load the association may
# flap a few times first, and while Wi-Fi is only "searching" the server prompt may be due)
after=$(awk '/said prompt=link_up/ && seen {exit} /INFO wifi: Wi-Fi connected/ && n++ {buf=""} n>=2 {buf = buf $0 "\n"; seen=1} END {printf "%s", buf}' "$LOG" | grep -c 'said prompt=link_down' || true)
[ "$after" = 0 ] || fail "'server connection failed' said $after time(s) after Wi-Fi came back, before the link did"
end=$((SECONDS + 120))
until [ "$(count "$W/order-sim.out" 'ack .*status=spoken')" -gt "$spoken_before" ] || ((SECONDS > end)); do sleep 0.5; done
id43=$(grep -m1 'order id=.* number=43' "$W/order-sim.out" | sed 's/.*order id=\([^ ]*\).*/\1/')
n43=$(count "$W/order-sim.out" "ack id=$id43 status=spoken")
say "(c) order 43 ($id43): $n43 spoken ack(s) after $(elapsed "$T_BACK") s; $(grep -c redeliver "$W/order-sim.out" || true) redelivery line(s)"
[ "$n43" = 1 ] || fail "order 43 acked spoken $n43 times, expected exactly once"
[ "$(count "$LOG" "alert: spoken id=$id43")" -le 1 ] || fail "crier spoke 43 more than once"
crier_stop
kill "$UDHCPC" "$UDHCPD" "$OSIM" 2>/dev/null || true
exec {OS_IN}>&-
supplicant_stop; ap_stop
grep -E 'wifi:|said prompt=wifi|said prompt=link' "$LOG" > "$W/wifi-lines.log" || true
{ echo "wrong_password_s=$T_WRONG"; } > "$W/timing"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
