#!/usr/bin/env python3
"""Checks the Pi audio device trees of an arm64 image against its own kernel, without a Pi.

    image/test-overlays.py ROOT [OVERLAY.dtbo ...]

ROOT is an image's root tree (build-image.sh runs this on it) or an unpacked linux-image-*-arm64
package on which `depmod -b ROOT/usr VERSION` has run: what is read is ROOT/usr/lib/linux-image-*/
broadcom/*.dtb and ROOT/usr/lib/modules/*/modules.alias (+ modules.builtin.modinfo). Overlays
default to ROOT/boot/firmware/overlays/crier-*.dtbo.

For each overlay and each board (Pi 3 B, 3 B+, 4 B, Zero 2 W) the overlay is applied to the
board's dtb with fdtoverlay (what the Pi firmware does for dtoverlay=) and, in the result:
  - every node the overlay adds or switches on has a compatible string that a module of this
    kernel (or the kernel itself) serves: an "of:N*T*C<compatible>" alias;
  - the I2S controller is enabled and its pins are GPIO18/19/21 in ALT0, and no pin the overlay
    claims is one of the buttons' lines (GPIO17, 22, 23, 24, 27);
  - every phandle the overlay's nodes point to resolves.
For the 3.5 mm jack (Pi 3 / 4: the Zero 2 W has none) each board's dtb must carry an enabled
brcm,bcm2835-vchiq node served by a module, and the kernel must have snd_bcm2835 on the vchiq
bus (alias vchiq:bcm2835-audio).
Exit 0 when all holds; otherwise every failed check is printed and the exit code is 1.
`--self-test` proves the checks can fail: an overlay with an unserved compatible string and
one that claims a button's pin must both be refused.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

BOARDS = {
    "bcm2837-rpi-3-b.dtb": "Pi 3 B",
    "bcm2837-rpi-3-b-plus.dtb": "Pi 3 B+",
    "bcm2711-rpi-4-b.dtb": "Pi 4 B",
    "bcm2837-rpi-zero-2-w.dtb": "Pi Zero 2 W",
}
JACK_BOARDS = {"bcm2837-rpi-3-b.dtb", "bcm2837-rpi-3-b-plus.dtb", "bcm2711-rpi-4-b.dtb"}
BUTTON_GPIOS = {17, 22, 23, 24, 27}
I2S_PINS = [18, 19, 21]
I2S_PATH = "/soc/i2s@7e203000"


def dts_of(dtb):
    out = subprocess.run(["dtc", "-q", "-I", "dtb", "-O", "dts", dtb], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"test-overlays: dtc could not read {dtb}: {out.stderr.strip()}")
    return out.stdout


def parse(dts):
    """Nodes of a dtc-decompiled tree: path -> {property: raw value text}."""
    nodes, stack = {}, []
    for line in dts.splitlines():
        line = line.strip()
        m = re.match(r"^(?:[\w-]+:\s*)?([^\s{=;]+)\s*\{$", line)
        if m:
            name = m.group(1)
            path = "/" if name == "/" else (stack[-1].rstrip("/") if stack else "") + "/" + name
            stack.append(path)
            nodes.setdefault(path, {})
        elif line.startswith("};"):
            stack.pop()
        else:
            m = re.match(r"^([#\w,.+-]+)\s*(?:=\s*(.*))?;$", line)
            if m and stack:
                nodes[stack[-1]][m.group(1)] = m.group(2) or ""
    return nodes


def strings(value):
    # dtc prints a string list as "a\0b" or "a", "b"
    found = re.findall(r'"((?:[^"\\]|\\.)*)"', value or "")
    return [part for s in found for part in s.split("\\0")]


def cells(value):
    return [int(x, 0) for x in re.findall(r"0x[0-9a-fA-F]+|\d+", (value or "").strip("<>"))]


def enabled(props):
    return strings(props.get("status", '"okay"'))[0] in ("okay", "ok")


def served_aliases(root):
    mods = sorted(glob.glob(os.path.join(root, "usr/lib/modules/*/modules.alias")))
    if not mods:
        raise SystemExit(f"test-overlays: no usr/lib/modules/*/modules.alias under {root} (run depmod -b)")
    aliases = []
    with open(mods[-1]) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "alias":
                aliases.append((parts[1], parts[2]))
    builtin = os.path.join(os.path.dirname(mods[-1]), "modules.builtin.modinfo")
    if os.path.exists(builtin):
        for entry in open(builtin, "rb").read().split(b"\0"):
            m = re.match(rb"^([\w-]+)\.alias=(.*)$", entry)
            if m:
                aliases.append((m.group(2).decode(), m.group(1).decode() + " (built in)"))
    return mods[-1], aliases


def module_for(compat, aliases):
    want_exact, want_prefix = f"of:N*T*C{compat}", f"of:N*T*C{compat}C*"
    for pattern, module in aliases:
        if pattern in (want_exact, want_prefix):
            return module
    return None


def dtb_dir(root):
    dirs = sorted(glob.glob(os.path.join(root, "usr/lib/linux-image-*/broadcom")))
    if not dirs:
        raise SystemExit(f"test-overlays: no usr/lib/linux-image-*/broadcom under {root}")
    return dirs[-1]


def check_overlay(dtbo, dtbs, aliases):
    errors, notes = [], []
    for board, label in BOARDS.items():
        base_path = os.path.join(dtbs, board)
        if not os.path.exists(base_path):
            errors.append(f"{label}: {board} is not in {dtbs}")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            merged_path = os.path.join(tmp, "merged.dtb")
            r = subprocess.run(["fdtoverlay", "-i", base_path, "-o", merged_path, dtbo], capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f"{label}: fdtoverlay refused {os.path.basename(dtbo)}: {r.stderr.strip()}")
                continue
            base, merged = parse(dts_of(base_path)), parse(dts_of(merged_path))
        phandles = {}
        for path, props in merged.items():
            if "phandle" in props:
                phandles[cells(props["phandle"])[0]] = path
        changed = [p for p, props in merged.items()
                   if "compatible" in props and enabled(props)
                   and (p not in base or not enabled(base[p]))]
        if not changed:
            errors.append(f"{label}: the overlay adds or enables no device")
        for path in changed:
            compats = strings(merged[path]["compatible"])
            served = [(c, module_for(c, aliases)) for c in compats]
            if not any(m for _, m in served):
                errors.append(f"{label}: {path} compatible {compats}: no module of this kernel serves it")
            else:
                notes.append(f"{label}: {path} {', '.join(c + ' -> ' + m for c, m in served if m)}")
            for prop in ("sound-dai", "pinctrl-0"):
                for ph in cells(merged[path].get(prop)):
                    if ph not in phandles:
                        errors.append(f"{label}: {path} {prop} points to phandle {ph}, which is not in the tree")
            for sub, props in merged.items():
                if sub.startswith(path + "/") and "sound-dai" in props:
                    for ph in cells(props["sound-dai"]):
                        if ph not in phandles:
                            errors.append(f"{label}: {sub} sound-dai points to phandle {ph}, not in the tree")
        i2s = merged.get(I2S_PATH)
        if i2s is None or not enabled(i2s):
            errors.append(f"{label}: {I2S_PATH} is not enabled")
        else:
            for ph in cells(i2s.get("pinctrl-0")):
                group = merged.get(phandles.get(ph, ""), {})
                pins, func = cells(group.get("brcm,pins")), cells(group.get("brcm,function"))
                if pins != I2S_PINS or func not in ([4], [4] * len(pins)):
                    errors.append(f"{label}: I2S pins are {pins} function {func}, not GPIO{I2S_PINS} ALT0 (4)")
        # Every pin group the overlay brought: none may take a button's line.
        for path, props in merged.items():
            if "brcm,pins" in props and (path not in base or props != base[path]):
                clash = BUTTON_GPIOS & set(cells(props["brcm,pins"]))
                if clash:
                    errors.append(f"{label}: {path} claims GPIO{sorted(clash)}, a button's line")
    return errors, notes


def check_jack(dtbs, aliases):
    errors, notes = [], []
    if not any(p == "vchiq:bcm2835-audio" for p, _ in aliases):
        errors.append("jack: no module serves vchiq:bcm2835-audio (snd_bcm2835 missing from this kernel)")
    else:
        notes.append("jack: vchiq:bcm2835-audio -> " + next(m for p, m in aliases if p == "vchiq:bcm2835-audio"))
    for board in sorted(JACK_BOARDS):
        nodes = parse(dts_of(os.path.join(dtbs, board)))
        vchiq = [(p, props) for p, props in nodes.items()
                 if "brcm,bcm2835-vchiq" in strings(props.get("compatible")) and enabled(props)]
        if not vchiq:
            errors.append(f"jack: {BOARDS[board]}: {board} has no enabled brcm,bcm2835-vchiq node")
            continue
        module = next((m for c in strings(vchiq[0][1]["compatible"]) for m in [module_for(c, aliases)] if m), None)
        if not module:
            errors.append(f"jack: {BOARDS[board]}: no module serves brcm,bcm2835-vchiq")
        else:
            notes.append(f"jack: {BOARDS[board]}: {vchiq[0][0]} -> {module}")
    return errors, notes


def run(root, overlays):
    dtbs = dtb_dir(root)
    alias_file, aliases = served_aliases(root)
    print(f"test-overlays: dtbs {dtbs}, {len(aliases)} aliases from {alias_file}")
    failed = 0
    for dtbo in overlays:
        errors, notes = check_overlay(dtbo, dtbs, aliases)
        for n in notes:
            print(f"  ok   {os.path.basename(dtbo)}: {n}")
        for e in errors:
            print(f"  FAIL {os.path.basename(dtbo)}: {e}")
        failed += len(errors)
    errors, notes = check_jack(dtbs, aliases)
    for n in notes:
        print(f"  ok   {n}")
    for e in errors:
        print(f"  FAIL {e}")
    failed += len(errors)
    return failed


def self_test(root):
    """Two broken overlays must be refused: the checks above can fail."""
    bad = {
        "unserved": '/dts-v1/;\n/plugin/;\n/ { fragment@0 { target-path = "/"; __overlay__ {'
                    ' crier-bogus { compatible = "crier,no-such-codec"; }; }; }; };\n',
        "button-pin": '/dts-v1/;\n/plugin/;\n/ { fragment@0 { target = <&gpio>; __overlay__ {'
                      ' p: p { brcm,pins = <18 19 21 23>; brcm,function = <4>; }; }; };'
                      ' fragment@1 { target = <&i2s>; __overlay__ { pinctrl-names = "default";'
                      ' pinctrl-0 = <&p>; status = "okay"; }; }; };\n',
    }
    dtbs = dtb_dir(root)
    _, aliases = served_aliases(root)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name, src in bad.items():
            dts, dtbo = os.path.join(tmp, name + ".dts"), os.path.join(tmp, name + ".dtbo")
            open(dts, "w").write(src)
            subprocess.run(["dtc", "-@", "-q", "-I", "dts", "-O", "dtb", "-o", dtbo, dts], check=True)
            errors, _ = check_overlay(dtbo, dtbs, aliases)
            print(f"  self-test {name}: {len(errors)} failed check(s){': ' + errors[0] if errors else ''}")
            ok = ok and bool(errors)
    return ok


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    if argv[1] == "--self-test":
        return 0 if self_test(argv[2]) else 1
    root = argv[1]
    overlays = argv[2:] or sorted(glob.glob(os.path.join(root, "boot/firmware/overlays/crier-*.dtbo")))
    if not overlays:
        print(f"test-overlays: no overlays given and none in {root}/boot/firmware/overlays/crier-*.dtbo")
        return 1
    failed = run(root, overlays)
    print(f"test-overlays: {len(overlays)} overlay(s) x {len(BOARDS)} boards: "
          + ("all checks passed" if not failed else f"{failed} check(s) FAILED"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
