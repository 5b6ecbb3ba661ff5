#!/usr/bin/env python3
"""Voice comparison figures (docs/voice.md, "Quality you can show" and "Partial coverage"),
in plain Python (no numpy): EBU R128 loudness (BS.1770-4 K-weighting and gating, at 48 kHz),
spectral centroid and median F0 of a WAV or of a segment of one, and PNG plots (waveform drawn
here, spectrogram by sox's `spectrogram` effect).

    analyze.py stats FILE.wav [FROM_S TO_S]     prints loudness, centroid, F0, duration
    analyze.py waveform FILE.wav OUT.png TITLE
    analyze.py join OUT.wav A.wav B.wav ...      joins with a 5 ms linear crossfade (as the splicer)
"""
import array
import cmath
import math
import struct
import sys
import wave
import zlib


def read(path):
    with wave.open(path) as w:
        assert w.getsampwidth() == 2, path
        rate, ch, n = w.getframerate(), w.getnchannels(), w.getnframes()
        a = array.array("h")
        a.frombytes(w.readframes(n))
    x = [v / 32768 for v in a[::ch]]
    return rate, x


def write(path, rate, x):
    a = array.array("h", (int(max(-1, min(1, v)) * 32767) for v in x))
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(a.tobytes())


# BS.1770-4 K-weighting at 48 kHz: the high shelf, then the high pass.
K = [((1.53512485958697, -2.69169618940638, 1.19839281085285), (-1.69065929318241, 0.73248077421585)),
     ((1.0, -2.0, 1.0), (-1.99004745483398, 0.99007225036621))]


def kweight(x):
    for (b0, b1, b2), (a1, a2) in K:
        y = [0.0] * len(x)
        x1 = x2 = y1 = y2 = 0.0
        for i, v in enumerate(x):
            o = b0 * v + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
            x2, x1, y2, y1 = x1, v, y1, o
            y[i] = o
        x = y
    return x


def loudness(x, rate=48000):
    """Integrated loudness (LUFS) of x at 48 kHz; a segment shorter than 400 ms: ungated."""
    assert rate == 48000
    y = kweight(x)
    block, hop = 19200, 4800
    if len(y) < block:
        ms = sum(v * v for v in y) / max(1, len(y))
        return -0.691 + 10 * math.log10(ms) if ms > 0 else float("-inf")
    sq = [0.0]
    for v in y:
        sq.append(sq[-1] + v * v)
    blocks = [(sq[i + block] - sq[i]) / block for i in range(0, len(y) - block + 1, hop)]
    lk = lambda ms: -0.691 + 10 * math.log10(ms) if ms > 0 else float("-inf")
    g1 = [b for b in blocks if lk(b) > -70]
    if not g1:
        return float("-inf")
    rel = lk(sum(g1) / len(g1)) - 10
    g2 = [b for b in g1 if lk(b) > rel]
    return lk(sum(g2) / len(g2))


def fft(a):
    n = len(a)
    if n == 1:
        return a
    even, odd = fft(a[0::2]), fft(a[1::2])
    t = [cmath.exp(-2j * math.pi * k / n) * odd[k] for k in range(n // 2)]
    return [even[k] + t[k] for k in range(n // 2)] + [even[k] - t[k] for k in range(n // 2)]


def centroid(x, rate):
    """Energy-weighted mean spectral centroid (Hz) over 1024-sample Hann frames, voiced frames only."""
    n, hop = 1024, 2048
    hann = [0.5 - 0.5 * math.cos(2 * math.pi * i / n) for i in range(n)]
    num = den = 0.0
    for s in range(0, len(x) - n, hop):
        f = x[s:s + n]
        e = sum(v * v for v in f) / n
        if e < 1e-5:
            continue
        spec = fft([f[i] * hann[i] for i in range(n)])[: n // 2]
        mag = [abs(c) for c in spec]
        tot = sum(mag)
        if tot <= 0:
            continue
        c = sum(k * rate / n * m for k, m in enumerate(mag)) / tot
        num += c * e
        den += e
    return num / den if den else float("nan")


def f0(x, rate):
    """Median F0 (Hz) of the voiced 40 ms frames, by autocorrelation on x decimated to 8 kHz."""
    d = max(1, rate // 8000)
    y = [sum(x[i:i + d]) / d for i in range(0, len(x) - d, d)]
    r = rate / d
    n, hop = int(0.04 * r), int(0.02 * r)
    lo, hi = int(r / 400), int(r / 60)
    out = []
    for s in range(0, len(y) - n - hi, hop):
        f = y[s:s + n]
        e = sum(v * v for v in f)
        if e / n < 1e-4:
            continue
        best, lag = 0.0, 0
        for L in range(lo, hi):
            c = sum(f[i] * y[s + i + L] for i in range(n))
            if c > best:
                best, lag = c, L
        if lag and best / e > 0.5:
            out.append(r / lag)
    out.sort()
    return out[len(out) // 2] if out else float("nan")


def stats(path, a=None, b=None):
    rate, x = read(path)
    if a is not None:
        x = x[int(a * rate):int(b * rate)]
    return {"seconds": len(x) / rate, "lufs": loudness(x, rate), "centroid_hz": centroid(x, rate), "f0_hz": f0(x, rate)}


def join(out, paths, fade_ms=5):
    rate = None
    y = []
    for p in paths:
        r, x = read(p)
        assert rate in (None, r), "one rate"
        rate = r
        n = int(rate * fade_ms / 1000)
        if y and len(x) > n and len(y) > n:
            for i in range(n):
                t = (i + 1) / (n + 1)
                y[len(y) - n + i] = y[len(y) - n + i] * (1 - t) + x[i] * t
            y += x[n:]
        else:
            y += x
    write(out, rate, y)
    return rate, y


def png(path, width, height, rows):
    """rows: height lists of width (r, g, b) tuples."""
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in rows)
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


FONT = {  # 3x5 digits and a few letters for the time axis
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001001001",
    "8": "111101111101111", "9": "111101111001111", ".": "000000000000010", "s": "000011010001110",
}


def waveform(path, out, seconds=None, width=900, height=160):
    rate, x = read(path)
    total = seconds or len(x) / rate
    bg, fg, axis = (255, 255, 255), (31, 90, 160), (170, 170, 170)
    rows = [[bg] * width for _ in range(height)]
    mid = height // 2 - 6
    amp = mid - 4
    for px in range(width):
        a, b = int(px * total * rate / width), int((px + 1) * total * rate / width)
        seg = x[a:b]
        if not seg:
            continue
        lo, hi = min(seg), max(seg)
        for yy in range(int(mid - hi * amp), int(mid - lo * amp) + 1):
            rows[yy][px] = fg
    for px in range(width):
        rows[mid][px] = rows[mid][px] if rows[mid][px] == fg else axis
        rows[height - 12][px] = axis
    step = 0.5 if total <= 5 else 1.0
    t = 0.0
    while t <= total:
        px = int(t / total * (width - 1))
        for yy in range(height - 12, height - 9):
            rows[yy][px] = axis
        label = ("%g" % t) + "s"
        for k, ch in enumerate(label):
            bits = FONT.get(ch, "0" * 15)
            for j in range(15):
                if bits[j] == "1":
                    X, Y = px + 2 + k * 4 + j % 3, height - 7 + j // 3
                    if 0 <= X < width and 0 <= Y < height:
                        rows[Y][X] = (80, 80, 80)
        t += step
    png(out, width, height, rows)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "stats":
        a = [float(v) for v in sys.argv[3:5]] if len(sys.argv) > 4 else [None, None]
        s = stats(sys.argv[2], *a)
        print(" ".join("%s=%.2f" % kv for kv in s.items()))
    elif cmd == "waveform":
        waveform(sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else None)
    elif cmd == "join":
        join(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
