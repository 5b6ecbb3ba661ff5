"""WAV helpers for the host-side checks (stdlib only)."""
import array, math, wave


def load(path):
    """→ (rate, mono samples as floats in [-1, 1]) of a 16-bit WAV (channels averaged)."""
    with wave.open(path) as w:
        assert w.getsampwidth() == 2, "expected 16-bit samples"
        rate, ch = w.getframerate(), w.getnchannels()
        a = array.array("h", w.readframes(w.getnframes()))
    if ch > 1:
        a = [sum(a[i:i + ch]) / ch for i in range(0, len(a), ch)]
    return rate, [s / 32768.0 for s in a]


def rms(x):
    return math.sqrt(sum(s * s for s in x) / len(x)) if len(x) else 0.0


def windows(x, rate, ms=10):
    n = max(1, rate * ms // 1000)
    return [rms(x[i:i + n]) for i in range(0, len(x) - n + 1, n)]
