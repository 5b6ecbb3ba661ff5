#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/* MHD_start_daemon and MHD_get_connection_info are variadic, which Swift cannot call: typed
   wrappers for the one configuration Crier uses (docs/setup.md, "Limits"). */
typedef enum MHD_Result (*crier_mhd_access_fn)(void *cls, struct MHD_Connection *c, const char *url,
                                               const char *method, const char *version,
                                               const char *upload_data, size_t *upload_data_size,
                                               void **con_cls);
typedef void (*crier_mhd_completed_fn)(void *cls, struct MHD_Connection *c, void **con_cls,
                                       enum MHD_RequestTerminationCode toe);

/* Worker threads with epoll, on a socket Crier bound (or systemd passed); no MHD log to stderr. */
static inline struct MHD_Daemon *crier_mhd_start(int listen_fd, unsigned int threads,
                                                 unsigned int connection_limit, unsigned int per_ip_limit,
                                                 unsigned int timeout_s, size_t memory_limit,
                                                 crier_mhd_access_fn access, crier_mhd_completed_fn completed,
                                                 void *cls) {
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC, 0,
                            NULL, NULL, access, cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_END);
}

/* The client's address as text ("" when unknown). */
static inline void crier_mhd_client(struct MHD_Connection *c, char *out, size_t len) {
    out[0] = 0;
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (i == NULL || i->client_addr == NULL) return;
    const struct sockaddr *sa = i->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)len);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)len);
}

static inline struct MHD_Response *crier_mhd_response(const void *data, size_t size) {
    return MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_MUST_COPY);
}
