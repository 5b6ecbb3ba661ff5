# Scenario 13, the setup hotspot (issue 34 point 3, docs/setup.md#6-no-network-yet-the-setup-hotspot) against a real kernel:
# mac80211_hwsim with three radios. wlan0 is the box's (root namespace), wlan1 the phone's
# (namespace "phone"), wlan2 the shop's access point (namespace "shop": hostapd WPA2-PSK,
# busybox udhcpd). The box starts with no Wi-Fi in crier.conf. crier-setup-ap.service is
# emulated by a loop that does what its path unit and ExecStartPre/ExecStopPost do (start
# image/rootfs/usr/local/sbin/crier-setup-ap when crier's request file appears, after
# `crier setup-ap-config`; afterwards regenerate the supplicant file from crier.conf and start
# the box's supplicant and DHCP client): the VM runs no systemd.
#   (a) both volume keys held 5.5 s (fifo input): the box scans, opens Crier-NNNN, says
#       "Connect your phone to Crier N N N N…"; time from the gesture to the AP beaconing;
#   (b) the phone (wpa_supplicant + udhcpc in its namespace) joins the open AP and gets a lease
#       (time from the gesture); DNS answers the Android, iOS and Windows probe names and any
#       other name with the box (10.42.0.1); from the phone's namespace the probe URLs answer
#       302 to http://10.42.0.1/, the portal page loads, its status lists the shop's network,
#       and the phone pairs with the code the box says (the debug build's speech hook, as in
#       Tests/integration/test_web.py);
#   (c) a wrong password submitted (`crier setup submit`, the control socket): "Wi-Fi password
#       wrong" said, the AP comes back, the phone rejoins and the page shows wrong_password;
#   (d) the right one submitted through the page from the phone (paired session + CSRF): the
#       box joins the shop network, crier.conf holds wifi.ssid/psk/country, "Wi-Fi connected"
#       said with the shop's DHCP address.
# The shop's SSID has quotes and `network={`, its passphrase quotes, `#` and `network={`: they
# reach the supplicant as hex through SET_NETWORK, never as text in a file.
# vm-timeout: 600
set -u
W=$RESULTS/hotspot
mkdir -p "$W"
LOG=$RESULTS/crier.log
SHOP_SSID='Shop "Net" network={'
SHOP_PASS='pa"ss #network={1'
SHOP_IP=192.168.78.1
REQ=/tmp/setup/setup-ap
SDIR=/tmp/setup-ap
HELPER="$REPO/image/rootfs/usr/local/sbin/crier-setup-ap"
elapsed() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN{printf "%.1f", b-a}'; }
count() { grep -c -- "$2" "$1" 2>/dev/null || true; }

# --- the radios -------------------------------------------------------------------------------
for m in $(cat "$RESULTS/wifi-modules/order"); do
  case "$m" in
    virtio.ko|virtio_ring.ko) continue ;;
    mac80211_hwsim.ko) insmod "$RESULTS/wifi-modules/$m" radios=3 || { fail "insmod $m"; exit 1; } ;;
    *) insmod "$RESULTS/wifi-modules/$m" 2>/dev/null || grep -q "^${m%.ko} " /proc/modules || { fail "insmod $m"; exit 1; } ;;
  esac
done
for i in $(seq 50); do [ -e /sys/class/net/wlan2 ] && break; sleep 0.1; done
[ -e /sys/class/net/wlan2 ] || { fail "mac80211_hwsim made no wlan0..wlan2: $(ls /sys/class/net)"; exit 1; }
for ns in phone:wlan1 shop:wlan2; do
  ip netns add "${ns%%:*}"
  iw phy "$(cat /sys/class/net/${ns#*:}/phy80211/name)" set netns name "${ns%%:*}" || { fail "cannot move ${ns#*:}"; exit 1; }
  ip -n "${ns%%:*}" link set lo up
done
say "radios: box wlan0, phone wlan1 (netns phone), shop AP wlan2 (netns shop); iw: $(iw phy "$(cat /sys/class/net/wlan0/phy80211/name)" info | grep -A3 'valid interface combinations' | tr -s ' \n\t' ' ')"

# --- the shop's network ---------------------------------------------------------------------------
ip -n shop link set wlan2 up
ip -n shop addr add "$SHOP_IP/24" dev wlan2
{
  echo "interface=wlan2"; echo "driver=nl80211"; echo "ssid2=$(printf '%s' "$SHOP_SSID" | od -An -tx1 | tr -d ' \n')"
  echo "hw_mode=g"; echo "channel=1"; echo "country_code=GB"; echo "ctrl_interface=/tmp/shop-hostapd"
  echo "wpa=2"; echo "rsn_pairwise=CCMP"; echo "wpa_key_mgmt=WPA-PSK"; echo "wpa_passphrase=$SHOP_PASS"
} > /tmp/shop-hostapd.conf
ip netns exec shop hostapd -B -P /tmp/shop-hostapd.pid -f "$W/shop-hostapd.log" /tmp/shop-hostapd.conf > "$W/shop-hostapd.out" 2>&1 \
  || { cat "$W/shop-hostapd.out"; fail "shop hostapd did not start"; exit 1; }
printf 'start 192.168.78.10\nend 192.168.78.20\ninterface wlan2\nlease_file /tmp/shop-udhcpd.leases\noption subnet 255.255.255.0\noption lease 600\n' > /tmp/shop-udhcpd.conf
: > /tmp/shop-udhcpd.leases
ip netns exec shop busybox udhcpd -f /tmp/shop-udhcpd.conf > "$W/shop-udhcpd.log" 2>&1 &
SHOP_DHCP=$!

# --- crier-setup-ap.service, emulated ------------------------------------------------------------
cat > /tmp/udhcpc.script <<'SH'
#!/bin/sh
case "$1" in
  deconfig) ip addr flush dev "$interface" ;;
  bound|renew) ip addr flush dev "$interface"; ip addr add "$ip/${mask:-24}" dev "$interface" ;;
esac
SH
chmod +x /tmp/udhcpc.script
mkdir -p /tmp/setup "$SDIR"
unit_loop() {
  while :; do
    if [ -e "$REQ" ]; then
      echo "[$(uptime_s)] unit: start" >> "$W/unit.log"
      "$CRIER_BIN" setup-ap-config --config /tmp/crier.conf --dir "$SDIR" >> "$W/unit.log" 2>&1
      "$HELPER" "$REQ" "$SDIR" wlan0 >> "$W/unit.log" 2>&1
      echo "[$(uptime_s)] unit: stopped; ExecStopPost: crier wifi-config + the box's supplicant" >> "$W/unit.log"
      if "$CRIER_BIN" wifi-config --config /tmp/crier.conf --output /tmp/wpa_supplicant.conf >> "$W/unit.log" 2>&1; then
        wpa_supplicant -B -i wlan0 -D nl80211 -c /tmp/wpa_supplicant.conf -P /tmp/wpa.pid -f "$W/box-wpa_supplicant.log"
        busybox udhcpc -i wlan0 -f -t 100 -T 1 -A 2 -s /tmp/udhcpc.script > "$W/box-udhcpc.log" 2>&1 &
        echo $! > /tmp/box-udhcpc.pid
      fi
    fi
    sleep 0.2
  done
}
unit_loop &
UNIT=$!

# --- the box --------------------------------------------------------------------------------------
ip link set wlan0 up
CRIER_VM_SERVER="" crier_config "status.on_start = off" "speech.lang = en" "input = fifo:/tmp/buttons" \
  "setup.after_minutes = 0" "setup.request_file = $REQ" "setup.repeat = 30" "web.listen = 0.0.0.0:80" \
  "device.id = Kiosk_7"
# The box's .local name as on the image: crier-hostname.service sets the host name from
# device.id (Kiosk_7 -> kiosk-7), then avahi-daemon answers kiosk-7.local. The image's script
# itself, pointed at this crier and crier.conf; avahi with a config in /tmp (the root is
# read-only; no D-Bus here: enable-dbus=no), as root without a chroot.
sed "s#/usr/bin/crier #$CRIER_BIN #; s#/boot/firmware/crier.conf#/tmp/crier.conf#" \
  "$REPO/image/rootfs/usr/local/sbin/crier-hostname" > /tmp/crier-hostname
BOX_NAME=$(sh /tmp/crier-hostname | sed -n 's/^crier-hostname: host name \([^ ]*\) .*/\1/p')
[ "$BOX_NAME" = kiosk-7 ] && [ "$(hostname)" = kiosk-7 ] || fail "crier-hostname set '$BOX_NAME' / host name '$(hostname)', expected kiosk-7" || true
mkdir -p /tmp/avahi
printf '[server]\nuse-ipv4=yes\nuse-ipv6=no\nenable-dbus=no\nallow-interfaces=wlan0\n[publish]\npublish-workstation=no\n' > /tmp/avahi/avahi-daemon.conf
avahi-daemon -f /tmp/avahi/avahi-daemon.conf --no-drop-root --no-chroot --no-rlimits -D 2> "$W/avahi-daemon.out" \
  || fail "avahi-daemon did not start: $(cat "$W/avahi-daemon.out")" || true
say "box: host name $BOX_NAME, avahi-daemon $(cat /run/avahi-daemon/pid 2>/dev/null) for $BOX_NAME.local on wlan0"
# the debug build's hook (Tests/integration/test_web.py): what the box says for pairing, for the phone to "hear"
CRIER_TEST_PAIRING_SPEECH_FILE=/tmp/pairing-speech.txt "$CRIER_BIN" run --config /tmp/crier.conf 2>> "$LOG" &
CRIER_PID=$!
wait_log "$LOG" ' INFO runtime: ready' 90 || { tail -n 20 "$LOG"; fail "crier not ready"; exit 1; }
wait_log "$LOG" 'controls: ready' 30 || say "note: no 'controls: ready' line"
sleep 1

# --- (a) the gesture ----------------------------------------------------------------------------
exec {BTN}>/tmp/buttons
echo "volume_up 0" >&$BTN
sleep 0.3
echo "volume_down 0" >&$BTN
T_GESTURE=$(uptime_s)
sleep 5.5
echo "volume_down 1" >&$BTN
echo "volume_up 1" >&$BTN
wait_log "$LOG" 'button volume_up: setupHold' 20 || fail "no 'button volume_up: setupHold' line after holding both volume keys 5.5 s"
n=$(count "$LOG" 'button volume_.*repeat')
say "(a) gesture: $(grep 'setupHold' "$LOG" | head -n1 | cut -d' ' -f2-); volume repeats logged while both were down: $n"
T_AP=""
end=$((SECONDS + 90))
until grep -q 'AP-ENABLED' "$SDIR/hostapd.log" 2>/dev/null || ((SECONDS > end)); do sleep 0.1; done
if grep -q 'AP-ENABLED' "$SDIR/hostapd.log" 2>/dev/null; then T_AP=$(elapsed "$T_GESTURE"); else fail "hostapd never reported AP-ENABLED (90 s)"; cat "$W/unit.log"; fi
AP=$(sed -n 's/^ssid=//p' "$SDIR/hostapd.conf")
say "(a) access point $AP beaconing $T_AP s after the second key went down (includes the 5 s hold and a scan)"
# the phone starts looking for it at once (as a phone whose owner heard the box would)
T_PHONE=$(uptime_s)
printf 'ctrl_interface=/tmp/phone-ctrl\nnetwork={\n\tssid="%s"\n\tkey_mgmt=NONE\n}\n' "$AP" > /tmp/phone.conf
ip -n phone link set wlan1 up
ip netns exec phone wpa_supplicant -B -i wlan1 -D nl80211 -c /tmp/phone.conf -P /tmp/phone-wpa.pid -f "$W/phone-wpa_supplicant.log" \
  || fail "the phone's wpa_supplicant did not start"
ip netns exec phone busybox udhcpc -i wlan1 -f -t 100 -T 1 -A 2 -s /tmp/udhcpc.script > "$W/phone-udhcpc.log" 2>&1 &
PHONE_DHCP=$!
# when the lease lands, stamped by a watcher (the checks below take their own time)
( for i in $(seq 1200); do ip -n phone -4 addr show dev wlan1 | grep -q 'inet 10\.42\.0\.' && { uptime_s > /tmp/phone-lease-at; break; }; sleep 0.1; done ) &
wait_log "$LOG" 'NOTICE setup: setup hotspot open' 30 || fail "no 'setup hotspot open' line"
wait_log "$LOG" 'said prompt=setup_hotspot' 120 || fail "the setup prompt was not said"
said=$(grep 'said prompt=setup_hotspot' "$LOG" | head -n1)
say "(a) $said ($(elapsed "$T_GESTURE") s)"
code=${AP#Crier-}
echo "$said" | grep -q "Crier $(echo "$code" | sed 's/./&/g' | sed 's/0/zero /g;s/1/one /g;s/2/two /g;s/3/three /g;s/4/four /g;s/5/five /g;s/6/six /g;s/7/seven /g;s/8/eight /g;s/9/nine /g' | sed 's/ $//')" \
  || fail "the prompt does not say the AP's code $code digit by digit: $said"
"$CRIER_BIN" setup --config /tmp/crier.conf state > "$W/state-open.json" 2>&1 || true
say "(a) page state: $(cat "$W/state-open.json")"
grep -q '"phase":"open"' "$W/state-open.json" || fail "setup state is not open"
grep -qF 'Shop \"Net\" network={' "$W/state-open.json" || fail "the scan list does not hold the shop's network"

# --- (b) the phone --------------------------------------------------------------------------------
end=$((SECONDS + 90))
until ip -n phone -4 addr show dev wlan1 | grep -q 'inet 10\.42\.0\.' || ((SECONDS > end)); do sleep 0.1; done
PHONE_IP=$(ip -n phone -4 -o addr show dev wlan1 | awk '{print $4}' | cut -d/ -f1 || true)
sleep 0.3
AT=$(cat /tmp/phone-lease-at 2>/dev/null || uptime_s)
T_LEASE=$(awk -v a="$T_GESTURE" -v b="$AT" 'BEGIN{printf "%.1f", b-a}')
T_PHONE_LEASE=$(awk -v a="$T_PHONE" -v b="$AT" 'BEGIN{printf "%.1f", b-a}')
case "$PHONE_IP" in 10.42.0.*) say "(b) phone joined $AP, lease $PHONE_IP, $T_PHONE_LEASE s after its supplicant started (when the AP was up), $T_LEASE s after the gesture" ;; *) fail "the phone got no 10.42.0.x lease in 90 s"; PHONE_IP="" ;; esac
for name in connectivitycheck.gstatic.com captive.apple.com www.msftconnecttest.com anything.example.org; do
  out=$(ip netns exec phone busybox nslookup -type=A "$name" 10.42.0.1 2>&1 || true)
  a=$(printf '%s\n' "$out" | awk '/^Name:/{n=1} n && /^Address/{print $NF}' | tail -n1 || true)
  if [ "$a" = 10.42.0.1 ]; then say "(b) DNS $name -> $a"; else fail "DNS $name from the phone: $(printf '%s' "$out" | tr '\n' ' ')" || true; fi
done
if grep -q 'DHCPACK' "$SDIR/dnsmasq.log"; then say "(b) dnsmasq: $(grep DHCPACK "$SDIR/dnsmasq.log" | tail -n1)"; fi
# the phone's browser, in its namespace: the box's address as DNS gave it, each probe's Host
cat > /tmp/phone-http.py <<'PY'
import http.client, json, os, re, sys, time, urllib.parse
ST = "/tmp/phone-session.json"
s = json.load(open(ST)) if os.path.exists(ST) else {}
def req(method, path, host="10.42.0.1", form=None):
    c = http.client.HTTPConnection("10.42.0.1", 80, timeout=60)
    h = {"Host": host}
    if form is not None: h["Content-Type"] = "application/x-www-form-urlencoded"
    if s.get("cookie"): h["Cookie"] = s["cookie"]
    c.request(method, path, body=urllib.parse.urlencode(form) if form is not None else None, headers=h)
    r = c.getresponse(); data = r.read(); c.close()
    j = json.loads(data) if r.getheader("Content-Type", "").startswith("application/json") else None
    if j and j.get("csrf"): s["csrf"] = j["csrf"]
    if r.getheader("Set-Cookie"): s["cookie"] = r.getheader("Set-Cookie").split(";")[0]
    json.dump(s, open(ST, "w"))
    return r, j, data
cmd = sys.argv[1]
if cmd == "probe":
    r, _, _ = req("GET", sys.argv[3], host=sys.argv[2]); print(r.status, r.getheader("Location"))
elif cmd == "portal":
    r, _, d = req("GET", "/"); print(r.status, len(d), "bytes", "portal-view" if b'id="setupf"' in d else "no-portal-view")
elif cmd == "status":
    r, j, _ = req("GET", "/api/status"); print(json.dumps(j.get("setup")))
elif cmd == "pair":
    t = time.time() - 1
    r, j, _ = req("POST", "/api/pair/request", form={})
    if r.status != 200: print("pair/request", r.status, j); sys.exit(1)
    end = time.time() + 60
    while not (os.path.exists("/tmp/pairing-speech.txt") and os.path.getmtime("/tmp/pairing-speech.txt") >= t) and time.time() < end: time.sleep(0.1)
    code = "".join(re.findall(r"\d", open("/tmp/pairing-speech.txt", encoding="utf-8").read()))[:4]
    r, j, _ = req("POST", "/api/pair", form={"code": code}); print("pair", r.status, "paired" if s.get("cookie") else "no-cookie")
elif cmd == "submit":
    r, j, _ = req("POST", "/api/setup", form={"csrf": s.get("csrf", ""), "ssid": sys.argv[2], "psk": sys.stdin.readline().rstrip("\n"), "country": "GB"})
    print("submit", r.status, json.dumps({k: v for k, v in (j or {}).items() if k != "csrf"}))
PY
phone_http() { ip netns exec phone timeout 90 python3 /tmp/phone-http.py "$@" 2>&1; }
T_PORTAL=$(uptime_s)
for probe in connectivitycheck.gstatic.com:/generate_204 clients3.google.com:/generate_204 captive.apple.com:/hotspot-detect.html www.msftconnecttest.com:/connecttest.txt anything.example.org:/; do
  out=$(phone_http probe "${probe%%:*}" "${probe#*:}")
  if [ "$out" = "302 http://10.42.0.1/" ]; then say "(b) http://$probe -> $out"; else fail "(b) probe http://$probe from the phone: $out" || true; fi
done
out=$(phone_http portal)
case "$out" in "200 "*portal-view) say "(b) portal http://10.42.0.1/: $out ($(elapsed "$T_GESTURE") s after the gesture)" ;; *) fail "(b) the portal page: $out" || true ;; esac
phone_http status > "$W/portal-status.json"
grep -qF '"ssid": "Shop \"Net\" network={"' "$W/portal-status.json" && say "(b) the portal lists the shop's network: $(head -c 300 "$W/portal-status.json")" \
  || fail "(b) the portal's status does not list the shop's network: $(cat "$W/portal-status.json")" || true
out=$(phone_http pair)
case "$out" in *"pair 200 paired") say "(b) the phone paired with the code the box said: $out" ;; *) fail "(b) pairing from the phone: $out" || true ;; esac
# the box's name over mDNS from the phone's network (a one-shot query as a phone's resolver
# sends it: 224.0.0.251:5353 from an ephemeral port, answered by unicast, RFC 6762 §6.7), then
# the page fetched by that name (Host: kiosk-7.local: served, not redirected like a probe)
cat > /tmp/phone-mdns.py <<'PY'
import socket, struct, sys, time
name, src = sys.argv[1], sys.argv[2]
q = struct.pack(">HHHHHH", 0x4372, 0, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 0))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(src))
s.settimeout(1.0)
def skip(d, i):
    while d[i]:
        if d[i] >= 0xC0: return i + 2
        i += 1 + d[i]
    return i + 1
def labels(d, i):
    out = []
    while d[i]:
        if d[i] >= 0xC0: out += labels(d, ((d[i] & 0x3F) << 8) | d[i + 1]); return out
        out.append(d[i + 1:i + 1 + d[i]].decode(errors="replace")); i += 1 + d[i]
    return out
t0 = time.monotonic(); sent = 0
while time.monotonic() - t0 < 60:
    s.sendto(q, ("224.0.0.251", 5353)); sent += 1
    try:
        while True:
            d, frm = s.recvfrom(9000)
            an = struct.unpack(">H", d[6:8])[0]; i = 12
            for _ in range(struct.unpack(">H", d[4:6])[0]): i = skip(d, i) + 4
            for _ in range(an):
                n = ".".join(labels(d, i)).lower(); i = skip(d, i)
                typ, _, _, rdl = struct.unpack(">HHIH", d[i:i + 10]); i += 10
                if typ == 1 and rdl == 4 and n == name:
                    print("%s %.2f %d %s" % (socket.inet_ntoa(d[i:i + 4]), time.monotonic() - t0, sent, frm[0])); sys.exit(0)
                i += rdl
    except socket.timeout:
        pass
print("unresolved %.1f %d" % (time.monotonic() - t0, sent)); sys.exit(1)
PY
T_MDNS=""
if [ -n "$PHONE_IP" ]; then
  out=$(ip netns exec phone timeout 90 python3 /tmp/phone-mdns.py "$BOX_NAME.local" "$PHONE_IP" 2>&1 || true)
  read -r M_ADDR M_S M_N M_FROM <<< "$out"
  if [ "$M_ADDR" = 10.42.0.1 ]; then
    T_MDNS=$M_S
    say "(b) mDNS from the phone: $BOX_NAME.local -> $M_ADDR in $M_S s ($M_N queries, answered by $M_FROM)"
    out=$(ip netns exec phone timeout 60 python3 -c '
import http.client, sys
c = http.client.HTTPConnection(sys.argv[1], 80, timeout=50); c.request("GET", "/", headers={"Host": sys.argv[2]}); r = c.getresponse(); d = r.read()
print(r.status, len(d), "bytes", "portal-view" if b"setupf" in d else "no-portal-view", r.getheader("Location"))' "$M_ADDR" "$BOX_NAME.local" 2>&1)
    case "$out" in "200 "*portal-view*) say "(b) http://$BOX_NAME.local/ from the phone: $out" ;; *) fail "(b) http://$BOX_NAME.local/ from the phone: $out" || true ;; esac
  else
    fail "(b) $BOX_NAME.local did not resolve over mDNS from the phone: $out; avahi: $(cat "$W/avahi-daemon.out" | tail -n 3)" || true
  fi
fi

# --- (c) a wrong password --------------------------------------------------------------------------
echo "not the password" | "$CRIER_BIN" setup --config /tmp/crier.conf submit --country GB "$SHOP_SSID" > "$W/submit-c.txt" 2>&1 || true
say "(c) submit: $(cat "$W/submit-c.txt")"
T_TRY=$(uptime_s)
wait_log "$LOG" 'setup: network tried: Wi-Fi password wrong' 120 || fail "no 'network tried: Wi-Fi password wrong' within 120 s"
say "(c) $(grep 'network tried' "$LOG" | tail -n1 | cut -d' ' -f2-) after $(elapsed "$T_TRY") s"
wait_log "$LOG" 'said prompt=wifi_wrong_password' 120 || fail "'Wi-Fi password wrong' not said"
if grep -q 'not the password' "$LOG"; then fail "the password is in crier's log"; fi
end=$((SECONDS + 60))
until [ "$(count "$SDIR/hostapd.log" 'AP-ENABLED')" -ge 1 ] && grep -q '^ap' "$REQ" 2>/dev/null || ((SECONDS > end)); do sleep 0.2; done
grep -q '^ap' "$REQ" || fail "the access point did not come back after the failed try"
"$CRIER_BIN" setup --config /tmp/crier.conf state > "$W/state-wrong.json" 2>&1 || true
grep -q '"outcome":"wrong_password"' "$W/state-wrong.json" || fail "the page state does not show wrong_password: $(cat "$W/state-wrong.json")"
end=$((SECONDS + 60))
# piped, not <(…): the guest has no /dev/fd (the process substitution failed every time: 60 s lost)
until ip netns exec phone wpa_cli -p /tmp/phone-ctrl -i wlan1 status 2>/dev/null | grep -q 'wpa_state=COMPLETED' || ((SECONDS > end)); do sleep 0.5; done
say "(c) phone back on $AP: $(ip netns exec phone wpa_cli -p /tmp/phone-ctrl -i wlan1 status 2>/dev/null | grep -E '^(wpa_state|ssid)=' | tr '\n' ' ')"
end=$((SECONDS + 60))
until ip -n phone -4 addr show dev wlan1 | grep -q 'inet 10\.42\.0\.' && phone_http status > "$W/portal-wrong.json" && grep -q '"outcome": "wrong_password"' "$W/portal-wrong.json" || ((SECONDS > end)); do sleep 1; done
grep -q '"outcome": "wrong_password"' "$W/portal-wrong.json" && say "(c) the page from the phone: $(grep -o '"last": {[^}]*}' "$W/portal-wrong.json")" \
  || fail "(c) the page does not show wrong_password to the phone: $(cat "$W/portal-wrong.json")" || true

# --- (d) the right password --------------------------------------------------------------------------
sleep 2
printf '%s\n' "$SHOP_PASS" | phone_http submit "$SHOP_SSID" > "$W/submit-d.txt" 2>&1 || true
grep -q '^submit 200 ' "$W/submit-d.txt" || fail "(d) the submit through the page from the phone: $(cat "$W/submit-d.txt")"
say "(d) submit: $(cat "$W/submit-d.txt")"
T_TRY=$(uptime_s)
wait_log "$LOG" 'setup: network tried: connected' 120 || fail "no 'network tried: connected' within 120 s"
say "(d) connected to the shop network $(elapsed "$T_TRY") s after the submit"
wait_log "$LOG" 'network saved to crier.conf' 30 || fail "the network was not saved to crier.conf"
wait_log "$LOG" 'INFO wifi: Wi-Fi connected' 120 || fail "no 'INFO wifi: Wi-Fi connected' (the box's own supplicant, from the saved crier.conf)"
say "(d) $(grep 'INFO wifi: Wi-Fi connected' "$LOG" | tail -n1 | cut -d' ' -f2-) ($(elapsed "$T_TRY") s after the submit)"
wait_log "$LOG" 'said prompt=wifi_connected' 120 || fail "'Wi-Fi connected' not said"
[ "$(count "$LOG" 'said prompt=wifi_connected')" = 1 ] || fail "'Wi-Fi connected' said $(count "$LOG" 'said prompt=wifi_connected') times"
cp /tmp/crier.conf "$W/crier.conf.after"
grep -v '^wifi.psk' /tmp/crier.conf > "$W/crier.conf.after.redacted"
"$CRIER_BIN" check-config /tmp/crier.conf > "$W/check-config.txt" 2>&1 || fail "crier.conf after setup does not check: $(grep -i error "$W/check-config.txt" | head -n3)"
grep -qxF "wifi.ssid = $SHOP_SSID" "$W/check-config.txt" || fail "crier.conf does not hold the shop's SSID: $(grep wifi.ssid "$W/check-config.txt")"
grep -qx 'wifi.psk = (set)' "$W/check-config.txt" || fail "crier.conf holds no wifi.psk"
grep -qx 'wifi.country = GB' "$W/check-config.txt" || fail "crier.conf holds no wifi.country = GB"
say "(d) crier.conf: $(grep -E '^wifi\.(ssid|psk|country|hidden) ' "$W/check-config.txt" | tr '\n' ';')"
grep -q "ssid=$(printf '%s' "$SHOP_SSID" | od -An -tx1 | tr -d ' \n')" /tmp/wpa_supplicant.conf || fail "the regenerated supplicant file does not carry the SSID as hex"
[ ! -e "$REQ" ] || fail "the request file is still there after joining"
say "(d) box on the shop network: $(ip -4 -o addr show dev wlan0 | awk '{print $4}')"

# --- end ----------------------------------------------------------------------------------------------
crier_stop
kill "$UNIT" "$SHOP_DHCP" "$PHONE_DHCP" "$(cat /tmp/box-udhcpc.pid 2>/dev/null)" 2>/dev/null || true
kill "$(cat /tmp/wpa.pid 2>/dev/null)" "$(cat /tmp/phone-wpa.pid)" "$(cat /tmp/shop-hostapd.pid)" 2>/dev/null || true
grep -E 'setup:|wifi:|said prompt=(setup|wifi)|button volume' "$LOG" > "$W/setup-lines.log" || true
n=$(grep -c 'crier-setup-ap: access point' "$W/unit.log" || true)
[ "$n" = 2 ] || fail "the access point was started $n times (expected 2: after the scan and after the wrong password; never after joining)" || true
kill "$(cat /run/avahi-daemon/pid 2>/dev/null)" 2>/dev/null || true
{ echo "gesture_to_ap_s=$T_AP"; echo "gesture_to_phone_lease_s=$T_LEASE"; echo "phone_start_to_lease_s=$T_PHONE_LEASE"; echo "mdns_resolve_s=$T_MDNS"; } > "$W/timing"
say "timing: gesture -> AP beaconing $T_AP s; the phone's supplicant -> its lease $T_PHONE_LEASE s (gesture -> lease $T_LEASE s); $BOX_NAME.local over mDNS $T_MDNS s"
[ ! -s "$RESULTS/failures" ] || { say "failures:"; cat "$RESULTS/failures"; exit 1; }
