/* The floor of `herald serve`'s accepted-send benchmark (scripts/bench/serve.sh): libmicrohttpd in
 * the server's own thread mode (an internal polling thread per worker, epoll, a thread pool sized
 * to the cores, suspend/resume allowed, inter-thread communication), answering every request with
 * a fixed 202 and a small JSON body once the request body has been read. No parsing, no store:
 * what the library and the kernel cost per request.
 *
 *   cc -O2 -o mhd_floor mhd_floor.c $(pkg-config --cflags --libs libmicrohttpd)
 *   ./mhd_floor 18687            # prints "listening on 127.0.0.1:18687 (N threads)"; SIGTERM stops
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char BODY[] = "{\"id\":\"00000000-0000-7000-8000-000000000000\",\"namespace\":\"default\",\"planned\":1}\n";
static struct MHD_Response *accepted;
static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **req_cls) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    if (*req_cls == NULL) { /* headers seen: ask for the body */
        *req_cls = (void *)1;
        return MHD_YES;
    }
    if (*upload_data_size != 0) { /* a body chunk: consume it */
        *upload_data_size = 0;
        return MHD_YES;
    }
    return MHD_queue_response(connection, 202, accepted);
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 18687;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = argc > 2 ? (unsigned)atoi(argv[2]) : (unsigned)(cores > 0 ? cores : 1);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    accepted = MHD_create_response_from_buffer(strlen(BODY), (void *)BODY, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(accepted, "Content-Type", "application/json");

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_AUTO;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, answer, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, threads > 1 ? threads : 1, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)15,
        MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "mhd_floor: cannot listen on 127.0.0.1:%d\n", port);
        return 1;
    }
    fprintf(stderr, "mhd_floor: listening on 127.0.0.1:%d (%u threads)\n", port, threads);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    while (!stop) pause();
    MHD_stop_daemon(d);
    MHD_destroy_response(accepted);
    return 0;
}
