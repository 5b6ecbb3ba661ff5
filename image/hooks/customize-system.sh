#!/bin/sh
# mmdebstrap --customize-hook: runs on the host after all packages are installed. $1 = root.
# The generic system: overlay files, identity, accounts, network, trimmed timers.
set -eu
root="$1"
src="$CRIER_IMAGE_DIR/rootfs"
in_root() { chroot "$root" "$@"; }

# 1. Overlay (hostname, hosts, fstab with LABELs and the read-only layout, networkd, journald,
#    crier drop-in, the first-boot growth of crier-data and the layout report).
(cd "$src" && find . -type f) | while read -r f; do
  install -D -m 0644 "$src/$f" "$root/$f"
done
chmod 0755 "$root/usr/local/sbin/"*
in_root systemctl enable crier-growdata.service crier-image-layout.service crier-mark-good.service

# 1b. Updates (docs/updates.md): RAUC's system.conf is installed on every build by
#     customize-final.sh (not here: it is configuration, and an edit to it must not cost a base rebuild).

# 2. Identity. mmdebstrap's final cleanup empties /etc/machine-id. On the read-only root systemd
#    cannot commit one: every boot gets a fresh, transient ID (mounted over /etc/machine-id from
#    /run). Nothing in the image keeps state by it: the journal is in RAM anyway, and DHCP
#    identifies the box by its MAC (rootfs/etc/systemd/network/80-wired.network), so the lease
#    stays the same across boots.
rm -f "$root/var/lib/dbus/machine-id"

# 3. Accounts: root has no password and is locked ('!*'): no login on the serial getty or
#    anywhere. Nothing listens for remote logins: no SSH server is installed.
in_root usermod -p '!*' root
if [ -e "$root/usr/sbin/sshd" ]; then echo "customize-system: sshd must not be in the image" >&2; exit 1; fi

# 4. Network: wired DHCP through systemd-networkd (rootfs/etc/systemd/network/80-wired.network),
#    DNS through systemd-resolved. Nothing waits for the network at boot: crier reconnects by
#    itself, and wait-online would add up to 2 min to a boot without a cable.
in_root systemctl enable systemd-networkd.service systemd-resolved.service systemd-timesyncd.service
in_root systemctl disable systemd-networkd-wait-online.service 2>/dev/null || true
#    Wi-Fi (docs/network.md): crier-wifi-config.service writes the supplicant's file from
#    crier.conf into /run at each boot; crier-wpa-supplicant.service runs wpa_supplicant on
#    wlan0 when it appears; 80-wifi.network does DHCP on it. Debian's own D-Bus-activated
#    wpa_supplicant.service (and its @ templates reading /etc, read-only here) are masked: one
#    supplicant per radio.
if [ -x "$root/usr/sbin/wpa_supplicant" ]; then
  in_root systemctl enable crier-wifi-config.service crier-wpa-supplicant.service
  in_root systemctl mask wpa_supplicant.service
fi
#    The setup hotspot (docs/setup.md#6-no-network-yet-the-setup-hotspot): crier-setup-ap.path starts crier-setup-ap.service
#    (hostapd + dnsmasq, as root with CAP_NET_*) when crier asks through /run/crier/setup-ap.
#    Debian's own hostapd.service and dnsmasq.service (when the full package is there) never run.
if [ -x "$root/usr/sbin/hostapd" ]; then
  in_root systemctl enable crier-setup-ap.path
  in_root systemctl disable hostapd.service 2>/dev/null || true
  in_root systemctl mask hostapd.service dnsmasq.service
fi

#    The local page (docs/setup.md): http://DEVICE-ID.local/ through avahi-daemon, the host
#    name set from crier.conf's device.id at each boot, the page advertised as _http._tcp.
if [ -x "$root/usr/sbin/avahi-daemon" ]; then
  in_root systemctl enable crier-hostname.service avahi-daemon.service
fi

# 5. A kiosk changes nothing behind the shop's back: no unattended apt runs, no periodic scrubs.
for t in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service; do
  in_root systemctl disable "$t" 2>/dev/null || true
done

# 6. Serial console: systemd-getty-generator starts serial-getty@ on the console named last on
#    the kernel command line (ttyS0 in QEMU, ttyS1 on a Pi 3/4/Zero 2 W), so no unit is enabled
#    by hand; the kernel command line (build-image.sh / customize-raspi.sh) names it.


# 7. Read-only root: systemd-tmpfiles-setup.service creates at every boot what tmpfiles.d(5)
#    lists (e.g. /var/lib/private, /var/cache/private); on the read-only root a directory that
#    is not there already is an error and a failed unit. So create it all now, except what lives
#    in RAM at run time (/run, /tmp, /var/tmp, /var/log are tmpfs or created there at boot).
#    /var/lib/systemd is still part of the tree here: build-image.sh moves it to crier-data.
in_root systemd-tmpfiles --create --exclude-prefix=/dev --exclude-prefix=/proc --exclude-prefix=/sys \
  --exclude-prefix=/run --exclude-prefix=/tmp --exclude-prefix=/var/tmp --exclude-prefix=/var/log 2>&1 |
  sed 's/^/customize-system: systemd-tmpfiles: /' || true
