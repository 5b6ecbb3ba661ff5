"""Host-side check of the smoke run: the loopback capture holds the 440 Hz tone."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import wav

run = sys.argv[1]
rate, x = wav.load(os.path.join(run, "results", "capture.wav"))
w = wav.windows(x, rate, 100)
loud = [r for r in w if r > 0.2]
print(f"smoke.check: capture {len(x) / rate:.2f} s at {rate} Hz, peak window RMS {max(w):.3f}, "
      f"{len(loud) * 0.1:.1f} s above 0.2 (tone RMS 0.354)")
ok = len(loud) >= 15  # the 2 s tone, give or take the start-up
ttys1 = open(os.path.join(run, "ttyS1.log"), errors="replace").read()
if "hello from ttyS1" not in ttys1:
    print("smoke.check: ttyS1.log lacks the guest's line"); ok = False
sys.exit(0 if ok else 1)
