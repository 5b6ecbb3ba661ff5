#!/usr/bin/env python3
"""Presses simulated buttons (gpio-sim lines, active low): for each OFFSET:DOWN:UP, writes
pull-down to the line's `pull`, waits DOWN s, writes pull-up, waits UP s. One process with
time.sleep: no fork/exec of `sleep` between the writes, which under TCG can stretch a 150 ms
press past a hold time. Appends what was achieved (CLOCK_MONOTONIC of each write, the real
down time) as JSON lines to --log, so a check can tell a stretched press from a crier bug.

  press.py --sysfs /sys/devices/platform/gpio-sim.0/gpiochip0 --log F 27:0.15:0.6 27:0.15:0.6
"""
import argparse, json, time

p = argparse.ArgumentParser()
p.add_argument("--sysfs", required=True)
p.add_argument("--log", required=True)
p.add_argument("--tag", default="")
p.add_argument("presses", nargs="+")
a = p.parse_args()


def pull(off, v):
    with open(f"{a.sysfs}/sim_gpio{off}/pull", "w") as f:
        f.write(v)
    return time.monotonic()


out = []
for spec in a.presses:
    off, down, up = spec.split(":")
    t0 = pull(off, "pull-down")
    time.sleep(float(down))
    t1 = pull(off, "pull-up")
    out.append({"tag": a.tag, "line": int(off), "down_at": t0, "up_at": t1, "down_s": round(t1 - t0, 4),
                "wanted_s": float(down)})
    time.sleep(float(up))
with open(a.log, "a") as f:
    for r in out:
        f.write(json.dumps(r) + "\n")
print("press: " + ", ".join(f"GPIO{r['line']} down {r['down_s'] * 1000:.0f} ms" for r in out))
