/* LD_PRELOAD probe for the latency benchmark: timestamps the first loud sample an application
 * hands to ALSA through snd_pcm_writei (Crier and aplay both write that way), before any plugin
 * buffering. It complements the FIFO detector: ALSA's `file` plugin holds back one buffer of
 * frames before it writes them to its file, which delays a self-paced writer (Crier) but not one
 * that dumps a whole clip at once (aplay on the null PCM).
 *
 * Build: gcc -O2 -shared -fPIC -o writei_probe.so writei_probe.c -ldl
 * Use:   WRITEI_PROBE_OUT=/path/events LD_PRELOAD=/path/writei_probe.so PROGRAM...
 * Output (appended, one line per onset): loud <CLOCK_MONOTONIC ns after writei returned> <pid>
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

snd_pcm_sframes_t snd_pcm_writei(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size) {
    if (!real_writei)
        real_writei = (writei_fn)dlsym(RTLD_NEXT, "snd_pcm_writei");
    snd_pcm_sframes_t n = real_writei(pcm, buffer, size);
    if (n <= 0 || buffer == NULL)
        return n;
    int64_t t = now_ns();
    if (out_fd == -2) {
        const char *g = getenv("WRITEI_PROBE_GAP_MS");
        gap_ns = (g ? atoll(g) : 250) * 1000000LL;
        const char *p = getenv("WRITEI_PROBE_OUT");
        out_fd = p ? open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    }
    if (out_fd < 0)
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
            char line[64];
            int len = snprintf(line, sizeof line, "loud %lld %d\n", (long long)t, (int)getpid());
            if (write(out_fd, line, len) < 0) {
                /* nothing to do: the benchmark will report the onset as missing */
            }
        }
        last_loud = t;
    }
    return n;
}
