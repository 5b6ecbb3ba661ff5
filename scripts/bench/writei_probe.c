/* LD_PRELOAD probe for the latency benchmark: timestamps the first loud sample an application
 * hands to ALSA through snd_pcm_writei (Crier and aplay both write that way), before any plugin
 * buffering. It complements the FIFO detector: ALSA's `file` plugin holds back one buffer of
 * frames before it writes them to its file, which delays a self-paced writer (Crier) but not one
 * that dumps a whole clip at once (aplay on the null PCM).
 *
 * Build: gcc -O2 -shared -fPIC -o writei_probe.so writei_probe.c -ldl
 * Use:   WRITEI_PROBE_OUT=/path/events LD_PRELOAD=/path/writei_probe.so PROGRAM...
 * Output (appended, one line per onset): loud <CLOCK_MONOTONIC ns after writei returned> <pid>
 * Two more stamps split an order's path inside the process (issue 36: where a slow order's time
 * goes): `rx <ns> <pid>` when recv() returns bytes holding an order line ("type":"order"), taken
 * as recv returns, and `synth <ns> <pid>` when espeak_Synth is entered. A process that never
 * calls them (the peer: espeak-ng as a command, aplay) writes only `loud` lines.
 * An onset is a loud sample (|x| > 1 % of full scale, S16) after >= WRITEI_PROBE_GAP_MS (250) ms
 * without one, or the first loud sample of the process. Only S16 formats are scanned.
 */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef int (*synth_fn)(const void *, size_t, unsigned int, int, unsigned int, unsigned int, unsigned int *, void *);
typedef snd_pcm_sframes_t (*writei_fn)(snd_pcm_t *, const void *, snd_pcm_uframes_t);

static writei_fn real_writei;
static int out_fd = -2;
static int64_t last_loud = -1;
static int64_t gap_ns = -1;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Opens the output on first use; -1 when the benchmark gave none. */
static int output(void) {
    if (out_fd == -2) {
        const char *g = getenv("WRITEI_PROBE_GAP_MS");
        gap_ns = (g ? atoll(g) : 250) * 1000000LL;
        const char *p = getenv("WRITEI_PROBE_OUT");
        out_fd = p ? open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    }
    return out_fd;
}

static void stamp(const char *what, int64_t t) {
    if (output() < 0)
        return;
    char line[64];
    int len = snprintf(line, sizeof line, "%s %lld %d\n", what, (long long)t, (int)getpid());
    if (write(out_fd, line, len) < 0) {
        /* nothing to do: the benchmark reports the stamp as missing */
    }
}

ssize_t recv(int fd, void *buf, size_t len, int flags) {
    static recv_fn real_recv;
    if (!real_recv)
        real_recv = (recv_fn)dlsym(RTLD_NEXT, "recv");
    ssize_t n = real_recv(fd, buf, len, flags);
    if (n > 0 && memmem(buf, (size_t)n, "\"type\":\"order\"", 14) != NULL)
        stamp("rx", now_ns());
    return n;
}

int espeak_Synth(const void *text, size_t size, unsigned int position, int position_type, unsigned int end_position,
                 unsigned int flags, unsigned int *unique_identifier, void *user_data) {
    static synth_fn real_synth;
    if (!real_synth)
        real_synth = (synth_fn)dlsym(RTLD_NEXT, "espeak_Synth");
    stamp("synth", now_ns());
    return real_synth(text, size, position, position_type, end_position, flags, unique_identifier, user_data);
}

snd_pcm_sframes_t snd_pcm_writei(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size) {
    if (!real_writei)
        real_writei = (writei_fn)dlsym(RTLD_NEXT, "snd_pcm_writei");
    snd_pcm_sframes_t n = real_writei(pcm, buffer, size);
    if (n <= 0 || buffer == NULL)
        return n;
    int64_t t = now_ns();
    if (output() < 0)
        return n;
    snd_pcm_format_t fmt = SND_PCM_FORMAT_S16_LE;
    snd_pcm_hw_params_t *hw;
    if (snd_pcm_hw_params_malloc(&hw) == 0) {
        if (snd_pcm_hw_params_current(pcm, hw) == 0)
            snd_pcm_hw_params_get_format(hw, &fmt);
        snd_pcm_hw_params_free(hw);
    }
    if (fmt != SND_PCM_FORMAT_S16_LE)
        return n;
    ssize_t bytes = snd_pcm_frames_to_bytes(pcm, n);
    const int16_t *s = buffer;
    int loud = 0;
    for (ssize_t i = 0; i < bytes / 2; i++) {
        if (s[i] > 327 || s[i] < -327) {
            loud = 1;
            break;
        }
    }
    if (loud) {
        if (last_loud < 0 || t - last_loud > gap_ns) {
            stamp("loud", t);
        }
        last_loud = t;
    }
    return n;
}
