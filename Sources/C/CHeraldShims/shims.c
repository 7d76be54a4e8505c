// glibc declares posix_spawn_file_actions_addclosefrom_np and _addchdir_np under _GNU_SOURCE.
#define _GNU_SOURCE 1
#include "CHeraldShims.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

CURLcode herald_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
CURLcode herald_curl_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
CURLcode herald_curl_easy_setopt_cstr(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
CURLcode herald_curl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
CURLcode herald_curl_easy_setopt_write(CURL *h, size_t (*fn)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fn);
}
CURLcode herald_curl_easy_setopt_header(CURL *h, size_t (*fn)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, fn);
}
CURLcode herald_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
CURLcode herald_curl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
CURLcode herald_curl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
CURLcode herald_curl_easy_getinfo_socket(CURL *h, CURLINFO i, curl_socket_t *v) { return curl_easy_getinfo(h, i, v); }
CURLMcode herald_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
CURLcode herald_curl_easy_setopt_closesocket(CURL *h, int (*fn)(void *, curl_socket_t)) {
    return curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, fn);
}
CURLcode herald_curl_easy_setopt_opensocket(
    CURL *h, curl_socket_t (*fn)(void *, curlsocktype, struct curl_sockaddr *)) {
    return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, fn);
}
CURLcode herald_curl_easy_setopt_prereq(CURL *h, int (*fn)(void *, char *, char *, int, int)) {
    return curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, fn);
}

int herald_tcp_cork(int fd) {
#ifdef TCP_CORK
    int on = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
#else
    (void)fd;
    return -1;
#endif
}
int herald_tcp_push(int fd) {
    int on = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

int herald_sqlite3_bind_text_transient(sqlite3_stmt *s, int i, const char *t, int n) {
    return sqlite3_bind_text(s, i, t, n, SQLITE_TRANSIENT);
}
int herald_sqlite3_bind_blob_transient(sqlite3_stmt *s, int i, const void *d, int n) {
    return sqlite3_bind_blob(s, i, d, n, SQLITE_TRANSIENT);
}

void herald_openssl_free(void *p) { OPENSSL_free(p); }
long herald_bio_get_mem_data(BIO *b, char **d) { return BIO_get_mem_data(b, d); }

int herald_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
int herald_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}
