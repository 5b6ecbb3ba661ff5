#include <mpg123.h>

/* mpg123_param is a macro (mpg123_param2 since 1.32's API): a wrapper keeps Swift off the
   versioned name, so Debian 12's and 13's libmpg123 both link. */
static inline int crier_mpg123_param(mpg123_handle *h, enum mpg123_parms t, long v) {
    return mpg123_param(h, t, v, 0.0);
}
