#!/bin/sh
# mmdebstrap --customize-hook: crier itself. $1 = root.
# The .deb (if given with --deb) was installed by mmdebstrap's --include with its dependencies.
# It ships the box's defaults in /usr/share/crier/ (crier.conf, asound.conf, config.txt,
# kiosk.conf) without activating them; a dedicated box (this image) activates them here.
set -eu
root="$1"
share="$root/usr/share/crier"
if chroot "$root" dpkg-query -W -f='${Status}' crier 2>/dev/null | grep -q "install ok installed"; then
  chroot "$root" systemctl enable crier.service
  # Port 80 for the local page, from systemd (crier itself has no capability; docs/setup.md).
  if [ -f "$root/lib/systemd/system/crier.socket" ] || [ -f "$root/usr/lib/systemd/system/crier.socket" ]; then
    chroot "$root" systemctl enable crier.socket
  fi
  echo "customize-crier: crier $(chroot "$root" dpkg-query -W -f='${Version}' crier) installed, crier.service enabled"
  # Nobody watches a shop's box: after crier's restart limit, reboot rather than stay silent.
  if [ -f "$share/kiosk.conf" ]; then
    install -D -m 0644 "$share/kiosk.conf" "$root/etc/systemd/system/crier.service.d/kiosk.conf"
    echo "customize-crier: kiosk.conf drop-in installed (StartLimitAction=reboot)"
  fi
  # Named ALSA outputs (crier_jack, crier_usb, ...) that crier.conf's audio.device can pick.
  if [ -f "$share/asound.conf" ] && [ ! -e "$root/etc/asound.conf" ]; then
    install -m 0644 "$share/asound.conf" "$root/etc/asound.conf"
    echo "customize-crier: /etc/asound.conf from the package"
  fi
else
  echo "customize-crier: no crier package (built without --deb): runtime libraries only"
fi

# The one file a shop edits from a PC: crier.conf on the FAT boot partition. The package's
# example (it documents every key of that version) wins over the image's fallback.
conf="$root/boot/firmware/crier.conf"
if [ ! -e "$conf" ]; then
  for example in "$share/crier.conf" "$root/usr/share/doc/crier/crier.conf.example" "$CRIER_IMAGE_DIR/boot/crier.conf"; do
    if [ -f "$example" ]; then cp "$example" "$conf"; echo "customize-crier: crier.conf from ${example#"$root"}"; break; fi
  done
fi

# The image serves the local page on port 80 (crier.socket): set in the card's crier.conf, where
# a shop can turn it off (`web.listen = off`). Not the package's default: a box set up by hand
# opens no port unasked.
if [ -f "$conf" ] && ! grep -q '^[[:space:]]*web\.listen[[:space:]]*=' "$conf"; then
  printf '\n# The page for phones: http://DEVICE-ID.local/ (docs/setup.md); off turns it off.\nweb.listen = 0.0.0.0:80\n' >> "$conf"
  echo "customize-crier: web.listen = 0.0.0.0:80 in crier.conf"
fi
