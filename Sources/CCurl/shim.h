#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
   wrapper per argument kind Crier uses. */
typedef size_t (*crier_curl_data_fn)(char *ptr, size_t size, size_t nmemb, void *user);
typedef int (*crier_curl_progress_fn)(void *user, curl_off_t dltotal, curl_off_t dlnow,
                                      curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode crier_curl_set_long(CURL *c, CURLoption o, long v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode crier_curl_set_string(CURL *c, CURLoption o, const char *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode crier_curl_set_pointer(CURL *c, CURLoption o, void *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode crier_curl_set_data_fn(CURL *c, CURLoption o, crier_curl_data_fn f) { return curl_easy_setopt(c, o, f); }
static inline CURLcode crier_curl_set_progress_fn(CURL *c, crier_curl_progress_fn f) {
    return curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, f);
}
static inline CURLcode crier_curl_get_long(CURL *c, CURLINFO i, long *v) { return curl_easy_getinfo(c, i, v); }
