# Crier A/B boot script for U-Boot (Debian's u-boot-rpi, rpi_arm64), compiled to boot.scr on
# the boot partition by image/hooks/customize-raspi.sh (mkimage -T script). docs/updates.md.
#
# Slot choice is RAUC's U-Boot contract, kept in uboot.env on this FAT partition:
#   BOOT_ORDER   "A B" or "B A": slots in the order to try (rauc install puts the new one first)
#   BOOT_A_LEFT, BOOT_B_LEFT   attempts left for each slot (rauc status mark-good sets it back
#                to 3, mark-bad to 0)
# Every boot takes one attempt from the first slot in BOOT_ORDER that has any left and saves
# the environment BEFORE loading its kernel, so a kernel that hangs or panics, a root that does
# not mount, or a crier that never becomes healthy (crier-mark-good reboots a trial that is not
# healthy in time) uses the attempts up and the next boot goes to the other slot without a
# human. Slot A is partition 2, slot B partition 3; the kernel and initrd come from the slot's
# own root (/vmlinuz, /initrd.img), so a bundle brings its kernel with it.
# Extra kernel parameters: crier-bootargs.txt on this partition, one line
#   crier_extra_bootargs=...
# (read with env import -t; nothing else in that file is used).

# u-boot-rpi's built-in environment starts the USB host before this script (preboot=usb start,
# for a USB keyboard at U-Boot's prompt, which a kiosk never has). Left started, it leaves the
# Pi's DWC2 controller so that Linux sees no USB device at all under QEMU raspi3b (the speaker,
# Ethernet on a Pi 3, a stick); "usb stop" does not undo it. So on the very first power-on the
# script clears preboot, saves and restarts once, before any attempt is counted: from then on
# U-Boot never touches USB (and boots ~2 s sooner).
if test -n "${preboot}"; then
  echo "crier-boot: first power-on: USB stays off in U-Boot from now on (preboot was: ${preboot}); restarting once"
  setenv preboot
  saveenv
  reset
fi

test -n "${BOOT_ORDER}" || setenv BOOT_ORDER "A B"
test -n "${BOOT_A_LEFT}" || setenv BOOT_A_LEFT 3
test -n "${BOOT_B_LEFT}" || setenv BOOT_B_LEFT 3

setenv crier_slot
for s in ${BOOT_ORDER}; do
  if test -z "${crier_slot}"; then
    if test "${s}" = "A" && test ${BOOT_A_LEFT} -gt 0; then
      setexpr BOOT_A_LEFT ${BOOT_A_LEFT} - 1
      setenv crier_slot A
      setenv crier_part 2
    elif test "${s}" = "B" && test ${BOOT_B_LEFT} -gt 0; then
      setexpr BOOT_B_LEFT ${BOOT_B_LEFT} - 1
      setenv crier_slot B
      setenv crier_part 3
    fi
  fi
done

if test -z "${crier_slot}"; then
  # Both slots used up (e.g. power cuts during both trials): start over rather than stop,
  # a box nobody looks after must keep trying.
  echo "crier-boot: no slot has attempts left (BOOT_ORDER=${BOOT_ORDER}); resetting both to 3"
  setenv BOOT_A_LEFT 3
  setenv BOOT_B_LEFT 3
  saveenv
  reset
fi

echo "crier-boot: slot ${crier_slot} (partition ${crier_part}); attempts left now A=${BOOT_A_LEFT} B=${BOOT_B_LEFT}; order ${BOOT_ORDER}"
saveenv

setenv crier_extra_bootargs
if load ${devtype} ${devnum}:1 0x05000000 crier-bootargs.txt; then
  env import -t 0x05000000 ${filesize} crier_extra_bootargs
fi

if load ${devtype} ${devnum}:${crier_part} ${kernel_addr_r} /vmlinuz; then
  setenv crier_kernel_size ${filesize}
else
  echo "crier-boot: slot ${crier_slot} has no /vmlinuz; marking it unbootable"
  setenv BOOT_${crier_slot}_LEFT 0
  saveenv
  reset
fi
# Above the kernel: booti may move a 2 MiB-aligned Image of ~40 MB up to 0x2a00000.
setenv ramdisk_addr_r 0x06000000
if load ${devtype} ${devnum}:${crier_part} ${ramdisk_addr_r} /initrd.img; then
  setenv crier_initrd ${ramdisk_addr_r}:${filesize}
else
  echo "crier-boot: slot ${crier_slot} has no /initrd.img; marking it unbootable"
  setenv BOOT_${crier_slot}_LEFT 0
  saveenv
  reset
fi

# root=PARTUUID: the disk identifier 0x43524945 ("CRIE") with the partition number, so the
# slot's own partition is mounted whatever the card reader calls the disk. ro: the root is
# read-only. panic=10: a kernel panic reboots, which uses up an attempt.
setenv bootargs "console=tty0 console=ttyS1,115200 root=PARTUUID=43524945-0${crier_part} rootfstype=ext4 rootwait ro quiet panic=10 rauc.slot=${crier_slot} ${crier_extra_bootargs}"
echo "crier-boot: booti with ${bootargs}"
# fdt_addr: the device tree the Pi firmware passed on (config.txt's dtoverlay= lines applied).
booti ${kernel_addr_r} ${crier_initrd} ${fdt_addr}
echo "crier-boot: booti returned; resetting"
reset
