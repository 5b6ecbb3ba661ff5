#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ALSA reports details through an error callback that takes a va_list and by default prints
   to stderr, outside Crier's log format. The callback is written here in C, not as a Swift
   closure: Swift 6.0 (Debian 13's compiler) crashes in SILGen on a closure with a va_list
   parameter when it compiles for aarch64, where va_list is a struct rather than a pointer.
   Each thread keeps its own last message (ALSA calls the handler on the failing thread);
   Swift takes it with crier_alsa_take_error. (The slot is a function's static: a file-scope
   static in this header is not emitted by Swift's Clang importer, the function's is.) */
static inline char *crier_alsa_slot(void) {
    static _Thread_local char slot[256];
    return slot;
}

static inline void crier_alsa_error_handler(const char *file, int line, const char *function,
                                            int err, const char *fmt, va_list args) {
    (void)file; (void)line; (void)function; (void)err;
    if (fmt == NULL) return;
    vsnprintf(crier_alsa_slot(), 256, fmt, args);
}

/* Routes this process's ALSA messages to the per-thread slot (idempotent). */
static inline void crier_alsa_capture_errors(void) {
    snd_lib_error_set_local(crier_alsa_error_handler);
}

/* Copies this thread's last message into buf (NUL-terminated, truncated to size) and clears it.
   Returns its length; 0 when there was none. */
static inline int crier_alsa_take_error(char *buf, int size) {
    if (size <= 0) return 0;
    char *slot = crier_alsa_slot();
    size_t n = strnlen(slot, 256);
    if (n >= (size_t)size) n = (size_t)size - 1;
    memcpy(buf, slot, n);
    buf[n] = 0;
    slot[0] = 0;
    return (int)n;
}
