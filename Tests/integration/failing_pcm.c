/* A sound card that dies on cue, for the device-loss tests (Tests/integration/test_audio_loss.py).
 *
 * An ALSA external (ioplug) PCM, built by the test with gcc and loaded through the test's own
 * asoundrc. It plays like a clock-driven card: its hardware pointer follows CLOCK_MONOTONIC at
 * the stream's rate from the moment the stream starts, snd_pcm_delay says how much of what was
 * written is still queued, a period timer makes it pollable, and it underruns when the pointer
 * passes what was written. It watches what is written (a frame is loud when a sample of
 * channel 0 exceeds 1 % of full scale) and, once, disconnects: from then on writes fail with
 * ENODEV (the PCM state is DISCONNECTED, as after a USB DAC is pulled), snd_pcm_delay fails
 * with ENODEV, and its pointer stays where it stopped. Whatever was queued never plays.
 *
 *   mode "queued": as soon as the last loud frame written has been followed by `quiet_ms` of
 *                  written silence (the end of a clip: the test's speech has no pause that long)
 *                  while that frame has not played yet: a clip's end is lost in the buffer;
 *   mode "played": once the pointer is `after_ms` past the last loud frame (and that was
 *                  followed by `quiet_ms` of silence): the clip's end had played;
 *   mode "tail":   once the pointer is `after_ms` past the last frame not exactly silent (and
 *                  the last loud one was followed by `quiet_ms` of written silence): every
 *                  sound of the clip had played, its silent end may still be queued;
 *   skip N:        let the first N clip ends pass (default 0);
 *   away_ms N:     after failing, opening fails (ENODEV) for N ms: the device is away (default 0);
 *   marker FILE:   fail only while FILE does not exist; it is created on failing, so the device
 *                  "comes back" when it is opened again.
 *   log FILE:      one line per event (open, fail with positions, close with what it played).
 */
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

typedef struct {
	snd_pcm_ioplug_t io;
	int timer;
	int running;
	double t_start;
	long long hw_base;      /* pointer (frames since prepare) when the clock started */
	long long hw;           /* frames played since prepare */
	long long last_loud;    /* frame (since prepare) of the last loud frame written, -1 none */
	long long last_sound;   /* ... of the last frame not exactly silent */
	long long loud_frames;  /* loud frames written (this open) */
	int armed, failed;
	char mode[16];
	long quiet_ms, after_ms, skip, away_ms;
	long long passed;       /* last_loud of the last clip end let pass (skip) */
	char *marker, *log;
} fpcm;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void say(fpcm *p, const char *fmt, ...)
{
	if (!p->log)
		return;
	FILE *f = fopen(p->log, "a");
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static void fail(fpcm *p, const char *why)
{
	long long appl = (long long)p->io.appl_ptr;
	p->failed = 1;
	p->armed = 0;
	snd_pcm_ioplug_set_state(&p->io, SND_PCM_STATE_DISCONNECTED);
	if (p->marker) {
		int fd = open(p->marker, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	/* unplayed_loud: frames from the pointer to just past the last loud frame (0 if it had played). */
	long long unplayed = p->last_loud + 1 > p->hw ? p->last_loud + 1 - p->hw : 0;
	say(p, "fail mode=%s why=%s rate=%u buffer=%lu period=%lu hw=%lld appl=%lld queued=%lld last_loud=%lld unplayed_loud=%lld last_sound=%lld",
	    p->mode, why, p->io.rate, (unsigned long)p->io.buffer_size, (unsigned long)p->io.period_size,
	    p->hw, appl, appl - p->hw, p->last_loud, unplayed, p->last_sound);
}

static long frames(fpcm *p, long ms) { return (long)((long long)ms * p->io.rate / 1000); }

static void check(fpcm *p, long long appl)
{
	if (!p->armed || p->failed || p->last_loud < 0 || appl - p->last_loud < frames(p, p->quiet_ms))
		return;
	if (p->last_loud == p->passed)
		return;
	if (p->skip > 0) {
		p->skip--;
		p->passed = p->last_loud;
		say(p, "skip last_loud=%lld", p->last_loud);
		return;
	}
	if (!strcmp(p->mode, "queued") && p->hw <= p->last_loud)
		fail(p, "end_queued");
	else if (!strcmp(p->mode, "played") && p->hw >= p->last_loud + frames(p, p->after_ms))
		fail(p, "end_played");
	else if (!strcmp(p->mode, "tail") && p->hw > p->last_sound + frames(p, p->after_ms))
		fail(p, "sound_played");
}

/* Moves the pointer to the clock; -EPIPE when it passed what was written (an underrun). */
static int advance(fpcm *p)
{
	uint64_t ticks;
	while (read(p->timer, &ticks, sizeof ticks) > 0) {}
	if (p->failed || !p->running)
		return 0;
	long long appl = (long long)p->io.appl_ptr;
	long long pos = p->hw_base + (long long)((now() - p->t_start) * p->io.rate);
	if (pos > appl) {
		if (p->io.state != SND_PCM_STATE_DRAINING) {
			say(p, "underrun hw=%lld appl=%lld", pos, appl);
			return -EPIPE;
		}
		pos = appl;
	}
	p->hw = pos;
	check(p, appl);
	return 0;
}

static snd_pcm_sframes_t fp_pointer(snd_pcm_ioplug_t *io)
{
	fpcm *p = io->private_data;
	int err = advance(p);
	if (err < 0)
		return err;
	return p->hw % io->buffer_size;
}

static int fp_delay(snd_pcm_ioplug_t *io, snd_pcm_sframes_t *delay)
{
	fpcm *p = io->private_data;
	if (p->failed)
		return -ENODEV;
	int err = advance(p);
	if (err < 0)
		return err;
	if (p->failed)
		return -ENODEV;
	*delay = (snd_pcm_sframes_t)((long long)io->appl_ptr - p->hw);
	return 0;
}

static snd_pcm_sframes_t fp_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
				     snd_pcm_uframes_t offset, snd_pcm_uframes_t size)
{
	fpcm *p = io->private_data;
	if (p->failed)
		return -ENODEV;
	const snd_pcm_channel_area_t *a = &areas[0];
	long long at = (long long)io->appl_ptr;
	for (snd_pcm_uframes_t i = 0; i < size; i++) {
		const int16_t *s = (const int16_t *)((const char *)a->addr + (a->first + (offset + i) * a->step) / 8);
		if (*s != 0 && at + (long long)i > p->last_sound)
			p->last_sound = at + (long long)i;
		if (*s > 327 || *s < -327) {
			if (at + (long long)i > p->last_loud)
				p->loud_frames++;
			p->last_loud = at + (long long)i > p->last_loud ? at + (long long)i : p->last_loud;
		}
	}
	check(p, at + (long long)size);
	return (snd_pcm_sframes_t)size;
}

static int fp_start(snd_pcm_ioplug_t *io)
{
	fpcm *p = io->private_data;
	p->running = 1;
	p->t_start = now();
	p->hw_base = p->hw;
	return 0;
}

static int fp_stop(snd_pcm_ioplug_t *io)
{
	fpcm *p = io->private_data;
	if (p->running && !p->failed)
		advance(p);
	p->running = 0;
	return 0;
}

static int fp_prepare(snd_pcm_ioplug_t *io)
{
	fpcm *p = io->private_data;
	p->running = 0;
	p->hw = 0;
	p->last_loud = -1;
	p->last_sound = -1;
	p->passed = -1;
	long ns = (long)((long long)io->period_size * 1000000000LL / io->rate);
	struct itimerspec t = {{ns / 1000000000L, ns % 1000000000L}, {ns / 1000000000L, ns % 1000000000L}};
	timerfd_settime(p->timer, 0, &t, NULL);
	return 0;
}

static int fp_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds, unsigned short *revents)
{
	(void)io;
	*revents = nfds && (pfd[0].revents & POLLIN) ? POLLOUT : 0;
	return 0;
}

static int fp_close(snd_pcm_ioplug_t *io)
{
	fpcm *p = io->private_data;
	say(p, "close failed=%d loud_frames=%lld", p->failed, p->loud_frames);
	close(p->timer);
	free(p->marker);
	free(p->log);
	free(p);
	return 0;
}

static const snd_pcm_ioplug_callback_t callbacks = {
	.start = fp_start,
	.stop = fp_stop,
	.pointer = fp_pointer,
	.transfer = fp_transfer,
	.close = fp_close,
	.prepare = fp_prepare,
	.poll_revents = fp_poll_revents,
	.delay = fp_delay,
};

SND_PCM_PLUGIN_DEFINE_FUNC(crierfail)
{
	snd_config_iterator_t i, next;
	fpcm *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	strcpy(p->mode, "none");
	p->quiet_ms = 300;
	p->after_ms = 500;
	snd_config_for_each(i, next, conf) {
		snd_config_t *n = snd_config_iterator_entry(i);
		const char *id, *str;
		long v;
		if (snd_config_get_id(n, &id) < 0)
			continue;
		if (!strcmp(id, "comment") || !strcmp(id, "type") || !strcmp(id, "hint"))
			continue;
		if (!strcmp(id, "mode") && snd_config_get_string(n, &str) >= 0) {
			snprintf(p->mode, sizeof p->mode, "%s", str);
		} else if (!strcmp(id, "marker") && snd_config_get_string(n, &str) >= 0) {
			p->marker = strdup(str);
		} else if (!strcmp(id, "log") && snd_config_get_string(n, &str) >= 0) {
			p->log = strdup(str);
		} else if (!strcmp(id, "quiet_ms") && snd_config_get_integer(n, &v) >= 0) {
			p->quiet_ms = v;
		} else if (!strcmp(id, "after_ms") && snd_config_get_integer(n, &v) >= 0) {
			p->after_ms = v;
		} else if (!strcmp(id, "away_ms") && snd_config_get_integer(n, &v) >= 0) {
			p->away_ms = v;
		} else if (!strcmp(id, "skip") && snd_config_get_integer(n, &v) >= 0) {
			p->skip = v;
		} else {
			SNDERR("crierfail: unknown field %s", id);
			free(p);
			return -EINVAL;
		}
	}
	p->armed = strcmp(p->mode, "none") && !(p->marker && access(p->marker, F_OK) == 0);
	struct stat st;
	if (p->marker && p->away_ms > 0 && stat(p->marker, &st) == 0) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		double since = (t.tv_sec - st.st_mtim.tv_sec) + (t.tv_nsec - st.st_mtim.tv_nsec) / 1e9;
		if (since * 1000 < p->away_ms) {
			say(p, "away");
			free(p->marker);
			free(p->log);
			free(p);
			return -ENODEV;
		}
	}
	p->last_loud = -1;
	p->last_sound = -1;
	p->passed = -1;
	p->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (p->timer < 0) {
		free(p);
		return -errno;
	}
	p->io.version = SND_PCM_IOPLUG_VERSION;
	p->io.name = "crier failing PCM";
	p->io.callback = &callbacks;
	p->io.private_data = p;
	p->io.poll_fd = p->timer;
	p->io.poll_events = POLLIN;
	p->io.mmap_rw = 0;
	int err = snd_pcm_ioplug_create(&p->io, name, stream, mode);
	if (err < 0) {
		close(p->timer);
		free(p);
		return err;
	}
	static const unsigned int access_list[] = {SND_PCM_ACCESS_RW_INTERLEAVED};
	static const unsigned int format_list[] = {SND_PCM_FORMAT_S16_LE};
	if ((err = snd_pcm_ioplug_set_param_list(&p->io, SND_PCM_IOPLUG_HW_ACCESS, 1, access_list)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_list(&p->io, SND_PCM_IOPLUG_HW_FORMAT, 1, format_list)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&p->io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 2)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&p->io, SND_PCM_IOPLUG_HW_RATE, 8000, 192000)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&p->io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 64, 1 << 20)) < 0 ||
	    (err = snd_pcm_ioplug_set_param_minmax(&p->io, SND_PCM_IOPLUG_HW_PERIODS, 2, 64)) < 0) {
		snd_pcm_ioplug_delete(&p->io);
		return err;
	}
	say(p, "open mode=%s armed=%d", p->mode, p->armed);
	*pcmp = p->io.pcm;
	return 0;
}

SND_PCM_PLUGIN_SYMBOL(crierfail);
