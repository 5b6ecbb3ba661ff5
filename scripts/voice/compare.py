#!/usr/bin/env python3
"""Drives scripts/voice-compare.sh: renders alerts with `crier say --output` (espeak-ng, and a
pack), writes WAVs and PNGs, and measures the partial-coverage choice (docs/voice.md)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import analyze  # noqa: E402

CRIER = os.environ["CRIER"]
OUT = os.environ["OUT"]
WORK = os.environ["WORK"]


def say(text, out, lang, pack=None):
    cmd = [CRIER, "say", "--config", os.path.join(WORK, "empty.conf"), "--lang", lang, "--output", out]
    if pack:
        cmd += ["--voice-pack", pack]
    r = subprocess.run(cmd + [text], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("crier say failed: " + r.stderr)
    if pack and "said from voice pack clips" not in r.stderr:
        raise SystemExit("%r: the pack %s does not cover it:\n%s" % (text, pack, r.stderr))
    return out


def spectrogram(wav, png, title, seconds):
    subprocess.run(["sox", wav, "-n", "trim", "0", "%.2f" % seconds, "remix", "1", "rate", "16k", "spectrogram", "-x", "640", "-y", "200", "-z", "70", "-m",
                    "-t", title, "-c", "crier voice compare", "-o", png], check=True)


def quality(alerts, packs):
    """Each alert with espeak-ng and with each pack: WAVs, waveform and spectrogram PNGs, figures."""
    rows = []
    for k, (lang, text) in enumerate(alerts, 1):
        versions = [("espeak", None)] + [(name, p) for name, (l, p) in packs.items() if l == lang]
        wavs = []
        for name, pack in versions:
            wav = os.path.join(WORK, "alert%d-%s.wav" % (k, name))
            say(text, wav, lang, pack)
            wavs.append((name, wav))
        longest = max(analyze.read(w)[1].__len__() / 48000 for _, w in wavs)
        for name, wav in wavs:
            base = os.path.join(OUT, "alert%d-%s" % (k, name))
            analyze.waveform(wav, base + "-wave.png", longest + 0.1)
            # sox's font has no CJK glyphs: the alert's number names it (docs/voice.md has the text).
            spectrogram(wav, base + "-spec.png", "alert %d, %s%s" % (k, name, ": " + text if text.isascii() else ""), longest + 0.1)
            s = analyze.stats(wav)
            rows.append((k, text, name, s))
            # The WAV to listen to, mono at 16 kHz (a third of the size; espeak-ng itself renders at 22.05 kHz).
            subprocess.run(["sox", wav, "-c", "1", "-r", "16000", base + ".wav"], check=True)
    print("\n| alert | voice | seconds | loudness LUFS | centroid Hz | median F0 Hz |\n|---|---|---|---|---|---|")
    for k, text, name, s in rows:
        print("| %d %s | %s | %.2f | %.1f | %.0f | %.0f |" % (k, text, name, s["seconds"], s["lufs"], s["centroid_hz"], s["f0_hz"]))


def partial(cases):
    """Whole alert through espeak-ng against clips plus espeak-ng for the gap (joined here as the
    splicer joins clips: a 5 ms crossfade), with the loudness, centroid and F0 of each segment."""
    print("\n| case | version | seconds | segments (voice: LUFS, centroid Hz, F0 Hz, s) | jump at the boundary |\n|---|---|---|---|---|")
    for name, lang, pack, segments in cases:
        full = "".join(t for _, t in segments) if lang == "zh" else " ".join(t for _, t in segments)
        whole = say(full, os.path.join(WORK, name + "-whole.wav"), lang)
        ws = analyze.stats(whole)
        parts = []
        for i, (kind, t) in enumerate(segments):
            parts.append((kind, say(t, os.path.join(WORK, "%s-seg%d.wav" % (name, i)), lang, pack if kind == "clips" else None)))
        mixed = os.path.join(WORK, "partial-%s-mixed.wav" % name)
        analyze.join(mixed, [p for _, p in parts])
        subprocess.run(["sox", mixed, "-c", "1", "-r", "16000", os.path.join(OUT, "partial-%s-mixed.wav" % name)], check=True)
        subprocess.run(["sox", whole, "-c", "1", "-r", "16000", os.path.join(OUT, "partial-%s-whole.wav" % name)], check=True)
        segs = [(kind, analyze.stats(p)) for kind, p in parts]
        ms = analyze.stats(mixed)
        desc = "; ".join("%s: %.1f, %.0f, %.0f, %.2f" % (k, s["lufs"], s["centroid_hz"], s["f0_hz"], s["seconds"]) for k, s in segs)
        jumps = ["%.1f LU, %+.0f Hz centroid, %+.0f Hz F0" % (b["lufs"] - a["lufs"], b["centroid_hz"] - a["centroid_hz"], b["f0_hz"] - a["f0_hz"])
                 for (_, a), (_, b) in zip(segs, segs[1:])]
        print("| %s | whole through espeak-ng | %.2f | espeak: %.1f, %.0f, %.0f | none |" % (name, ws["seconds"], ws["lufs"], ws["centroid_hz"], ws["f0_hz"]))
        print("| %s | clips + espeak-ng gap | %.2f | %s | %s |" % (name, ms["seconds"], desc, " / ".join(jumps)))


if __name__ == "__main__":
    open(os.path.join(WORK, "empty.conf"), "w").close()
    what = sys.argv[1]
    packs = {}
    for spec in sys.argv[2:]:
        name, lang, path = spec.split(":", 2)
        packs[name] = (lang, path)
    if what == "quality":
        quality([("zh", "新客户来了，42号"), ("zh", "收款100.50元"), ("en", "New customer, number 42")], packs)
    elif what == "partial":
        cases = []
        for name, (lang, path) in packs.items():
            if lang == "zh":
                cases.append(("zh-shop-words-" + name, "zh", path, [("clips", "新客户来了，42号，"), ("espeak", "请到窗口取餐")]))
                cases.append(("zh-lost-clip-" + name, "zh", path + "-no-four", [("clips", "新客户来了，"), ("espeak", "四"), ("clips", "十二号")]))
            else:
                cases.append(("en-shop-words-" + name, "en", path, [("clips", "New customer, number 42,"), ("espeak", "please collect at the window")]))
                cases.append(("en-lost-clip-" + name, "en", path + "-no-forty", [("clips", "New customer, number"), ("espeak", "forty"), ("clips", "two")]))
        partial(cases)
