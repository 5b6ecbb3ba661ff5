#!/bin/sh
# mmdebstrap --customize-hook: crier itself. $1 = root.
# The .deb (if given with --deb) was installed by mmdebstrap's --include with its dependencies.
set -eu
root="$1"
if chroot "$root" dpkg-query -W -f='${Status}' crier 2>/dev/null | grep -q "install ok installed"; then
  chroot "$root" systemctl enable crier.service
  echo "customize-crier: crier $(chroot "$root" dpkg-query -W -f='${Version}' crier) installed, crier.service enabled"
else
  echo "customize-crier: no crier package (built without --deb): runtime libraries only"
fi

# The one file a shop edits from a PC: crier.conf on the FAT boot partition. The package's
# example (it documents every key of that version) wins over the image's fallback.
conf="$root/boot/firmware/crier.conf"
if [ ! -e "$conf" ]; then
  if [ -f "$root/usr/share/doc/crier/crier.conf.example" ]; then
    cp "$root/usr/share/doc/crier/crier.conf.example" "$conf"
  else
    cp "$CRIER_IMAGE_DIR/boot/crier.conf" "$conf"
  fi
fi
