#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_start_daemon, MHD_get_connection_info and MHD_get_daemon_info are variadic, which Swift cannot
   call: these inline wrappers are the only C Herald adds for libmicrohttpd. */

/** Starts a daemon on `addr` with the given callbacks and options (an options array, so no varargs
    cross into Swift). `cert_pem`/`key_pem` turn on TLS when both are non-NULL. */
static inline struct MHD_Daemon *herald_mhd_start(
    unsigned int flags, const struct sockaddr *addr, MHD_AccessHandlerCallback access,
    MHD_RequestCompletedCallback completed, MHD_NotifyConnectionCallback notify, void *cls,
    unsigned int threads, unsigned int idle_timeout, size_t memory_limit, unsigned int connection_limit,
    const char *cert_pem, const char *key_pem) {
    struct MHD_OptionItem ops[12];
    int i = 0;
    ops[i++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)addr};
    ops[i++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, cls};
    ops[i++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, cls};
    if (threads > 1) ops[i++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    ops[i++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)idle_timeout, NULL};
    if (memory_limit > 0)
        ops[i++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)memory_limit, NULL};
    if (connection_limit > 0)
        ops[i++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL};
    if (cert_pem != NULL && key_pem != NULL) {
        ops[i++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert_pem};
        ops[i++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key_pem};
    }
    ops[i++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(flags, 0, NULL, NULL, access, cls, MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
}

/** The socket of a connection, or -1. */
static inline int herald_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/** The client's numeric address (IPv4 dotted, IPv6 text) written into `out` (NUL-terminated); 0 when
    unknown (`out` is then ""). An IPv4-mapped IPv6 address is written as IPv4, so one client has one key. */
static inline int herald_mhd_client_address(struct MHD_Connection *connection, char *out, size_t len) {
    if (len == 0) return 0;
    out[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return 0;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
        return inet_ntop(AF_INET, &sin->sin_addr, out, (socklen_t)len) != NULL;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
            return inet_ntop(AF_INET, &sin6->sin6_addr.s6_addr[12], out, (socklen_t)len) != NULL;
        return inet_ntop(AF_INET6, &sin6->sin6_addr, out, (socklen_t)len) != NULL;
    }
    return 0;
}

/** The size in bytes of the request head (request line and headers) received on `connection`, or 0. */
static inline size_t herald_mhd_request_head_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}

/** The port the daemon listens on, or 0. */
static inline unsigned int herald_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}
