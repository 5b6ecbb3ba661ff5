"""WAV helpers for the host-side checks (stdlib only)."""
import array, math, wave


def load(path):
    """→ (rate, mono samples as floats in [-1, 1]) of a 16/32-bit WAV (channels averaged)."""
    with wave.open(path) as w:
        width, rate, ch = w.getsampwidth(), w.getframerate(), w.getnchannels()
        assert width in (2, 4), "expected 16- or 32-bit samples"
        a = array.array("h" if width == 2 else "i", w.readframes(w.getnframes()))
    full = 32768.0 if width == 2 else 2147483648.0
    if ch > 1:
        a = [sum(a[i:i + ch]) / ch for i in range(0, len(a), ch)]
    return rate, [s / full for s in a]


def rms(x):
    return math.sqrt(sum(s * s for s in x) / len(x)) if len(x) else 0.0


def windows(x, rate, ms=10):
    n = max(1, rate * ms // 1000)
    return [rms(x[i:i + n]) for i in range(0, len(x) - n + 1, n)]
