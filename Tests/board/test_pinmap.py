"""The pin table (docs/hardware.md), the wiring diagram (docs/wiring.svg), the Pi's real header
and the example config (board/crier.conf) must all say the same thing."""
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, read_conf

SVG_NS = {"s": "http://www.w3.org/2000/svg"}

# The 40-pin header of every Raspberry Pi since the B+: physical pin -> name. Written out
# independently of board/tools/make-wiring-svg.py on purpose.
GPIO_PINS = {3: 2, 5: 3, 7: 4, 8: 14, 10: 15, 11: 17, 12: 18, 13: 27, 15: 22, 16: 23, 18: 24,
             19: 10, 21: 9, 22: 25, 23: 11, 24: 8, 26: 7, 27: 0, 28: 1, 29: 5, 31: 6, 32: 12,
             33: 13, 35: 19, 36: 16, 37: 26, 38: 20, 40: 21}
POWER = {1: "3V3", 17: "3V3", 2: "5V", 4: "5V"}
GROUND = {6, 9, 14, 20, 25, 30, 34, 39}


def header_name(pin):
    if pin in GPIO_PINS:
        return "GPIO%d" % GPIO_PINS[pin]
    if pin in POWER:
        return POWER[pin]
    assert pin in GROUND, pin
    return "GND"


def test_header_reference_is_complete():
    assert set(GPIO_PINS) | set(POWER) | GROUND == set(range(1, 41))
    assert len(set(GPIO_PINS.values())) == 28   # GPIO0..27, each once


# ---- docs/hardware.md ---------------------------------------------------------------------

def table_rows():
    text = (ROOT / "docs/hardware.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- pin-table:start.*?-->\n(.*?)<!-- pin-table:end -->", text, re.S)
    assert m, "docs/hardware.md: pin table markers not found"
    lines = [l.strip() for l in m.group(1).strip().splitlines()]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[:4] == ["Function", "crier.conf key", "Header pin", "Signal"], header
    assert re.fullmatch(r"\|[-:| ]+\|", lines[1]), "second line must be the |---| rule"
    rows = []
    for l in lines[2:]:
        cells = [c.strip() for c in l.strip("|").split("|")]
        assert len(cells) == len(header), "bad table row: %s" % l
        rows.append({"function": cells[0], "key": cells[1].strip("`"),
                     "pin": int(cells[2]), "signal": cells[3]})
    return rows


def test_table_matches_the_header():
    rows = table_rows()
    assert len(rows) >= 10
    for r in rows:
        assert 1 <= r["pin"] <= 40, r
        assert r["signal"] == header_name(r["pin"]), \
            "hardware.md: pin %d is %s on a Pi, the table says %s" % (
                r["pin"], header_name(r["pin"]), r["signal"])


def test_no_pin_used_twice_for_different_signals():
    seen = {}
    for r in table_rows():
        if r["signal"] in ("GND", "5V", "3V3"):
            continue
        assert r["pin"] not in seen, "pin %d used for %s and %s" % (
            r["pin"], seen[r["pin"]], r["function"])
        seen[r["pin"]] = r["function"]


def test_default_buttons_are_the_documented_ones():
    buttons = {r["key"]: r["signal"] for r in table_rows() if r["key"].startswith("button.")}
    assert buttons == {"button.volume_up": "GPIO17", "button.volume_down": "GPIO27",
                       "button.mute": "GPIO22", "button.replay": "GPIO23",
                       "button.acknowledge": "GPIO24"}
    # and none of them collides with the UART (14/15), I2S (18-21) or I2C (2/3)
    reserved = {"GPIO%d" % n for n in (2, 3, 14, 15, 18, 19, 20, 21)}
    assert not reserved & set(buttons.values())


def test_example_config_uses_the_table_pins():
    conf = read_conf((ROOT / "board/crier.conf").read_text(encoding="utf-8"))
    for r in table_rows():
        if r["key"].startswith("button."):
            assert conf.get(r["key"]) == r["signal"], \
                "board/crier.conf %s = %r, docs/hardware.md says %s" % (
                    r["key"], conf.get(r["key"]), r["signal"])


# ---- docs/wiring.svg ----------------------------------------------------------------------

def svg():
    return ET.parse(ROOT / "docs/wiring.svg").getroot()


def text_of(el):
    return "".join(el.itertext()).strip()


def svg_pins():
    """pin -> (centre x, centre y, printed number, printed name) as drawn."""
    pins = {}
    for g in svg().iterfind(".//s:g[@class='pin']", SVG_NS):
        c = g.find("s:circle", SVG_NS)
        number = g.find("s:text[@class='pin-number']", SVG_NS)
        name = [t for t in g.iterfind("s:text", SVG_NS) if "pin-name" in t.get("class", "")]
        assert c is not None and number is not None and len(name) == 1, ET.tostring(g)
        pin = int(g.get("data-pin"))
        pins[pin] = (float(c.get("cx")), float(c.get("cy")), text_of(number), text_of(name[0]))
    return pins


def path_start(d):
    m = re.match(r"\s*M\s*(-?[\d.]+)[ ,]+(-?[\d.]+)", d)
    assert m, "path must start with an absolute M: %s" % d
    return float(m.group(1)), float(m.group(2))


def svg_wires():
    """(pin, signal, function) for every wire, where pin is the header pin the wire's path
    actually starts on (by geometry, not by the data- attribute)."""
    pins = svg_pins()
    labels = {text_of(t) for t in svg().iter("{http://www.w3.org/2000/svg}text")
              if "wire-label" in t.get("class", "")}
    out = []
    for g in svg().iterfind(".//s:g[@class='wire']", SVG_NS):
        path = g.find("s:path", SVG_NS)
        x, y = path_start(path.get("d"))
        at = [p for p, (cx, cy, _, _) in pins.items() if abs(cx - x) < 1 and abs(cy - y) < 1]
        assert len(at) == 1, "wire %s does not start on a pin" % ET.tostring(g)
        pin = at[0]
        assert int(g.get("data-pin")) == pin, "wire's data-pin disagrees with where it is drawn"
        _, _, number, name = pins[pin]
        assert name.split(" ")[0] == g.get("data-signal"), (pin, name, g.get("data-signal"))
        func = g.get("data-function")
        assert func in labels, "wire for %s has no visible label %r" % (pin, func)
        out.append((pin, name.split(" ")[0], func))
    return out


def test_svg_shows_the_whole_header_correctly():
    pins = svg_pins()
    assert sorted(pins) == list(range(1, 41))
    for pin, (x, y, number, name) in pins.items():
        assert number == str(pin)
        assert name.split(" ")[0] == header_name(pin), \
            "wiring.svg labels pin %d %r, a Pi has %s there" % (pin, name, header_name(pin))
    # physical layout: odd pins one column, even the other, two pins per row, pin 1 on top
    xs_odd = {pins[p][0] for p in pins if p % 2}
    xs_even = {pins[p][0] for p in pins if not p % 2}
    assert len(xs_odd) == 1 and len(xs_even) == 1 and xs_odd != xs_even
    for p in range(1, 40, 2):
        assert pins[p][1] == pins[p + 1][1], "pins %d and %d must share a row" % (p, p + 1)
        if p > 1:
            assert pins[p][1] > pins[p - 2][1]


def test_svg_and_table_agree():
    table = sorted((r["pin"], r["signal"], r["function"]) for r in table_rows())
    drawn = sorted(svg_wires())
    only_table = [t for t in table if t not in drawn]
    only_svg = [t for t in drawn if t not in table]
    assert not only_table and not only_svg, (
        "docs/hardware.md and docs/wiring.svg disagree:\n  only in the table: %s\n"
        "  only in the diagram: %s" % (only_table, only_svg))


def test_svg_is_what_the_generator_draws():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, str(ROOT / "board/tools/make-wiring-svg.py")],
                         capture_output=True, text=True, check=True).stdout
    assert out == (ROOT / "docs/wiring.svg").read_text(encoding="utf-8"), \
        "docs/wiring.svg is stale: python3 board/tools/make-wiring-svg.py > docs/wiring.svg"
