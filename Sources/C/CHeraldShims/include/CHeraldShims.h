// Thin C wrappers for C APIs that Swift cannot call directly: variadic functions and macros.
// No logic lives here.
#ifndef CHERALD_SHIMS_H
#define CHERALD_SHIMS_H

#include <curl/curl.h>
#include <sqlite3.h>
#include <openssl/crypto.h>
#include <openssl/bio.h>
#include <spawn.h>

// libcurl: curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic.
CURLcode herald_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode herald_curl_easy_setopt_ptr(CURL *handle, CURLoption option, void *value);
CURLcode herald_curl_easy_setopt_cstr(CURL *handle, CURLoption option, const char *value);
CURLcode herald_curl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode herald_curl_easy_setopt_write(CURL *handle, size_t (*fn)(char *, size_t, size_t, void *));
CURLcode herald_curl_easy_setopt_header(CURL *handle, size_t (*fn)(char *, size_t, size_t, void *));
CURLcode herald_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode herald_curl_easy_getinfo_ptr(CURL *handle, CURLINFO info, void **value);
CURLcode herald_curl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode herald_curl_easy_getinfo_socket(CURL *handle, CURLINFO info, curl_socket_t *value);
CURLMcode herald_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
CURLcode herald_curl_easy_setopt_closesocket(CURL *handle, int (*fn)(void *, curl_socket_t));
CURLcode herald_curl_easy_setopt_opensocket(
    CURL *handle, curl_socket_t (*fn)(void *, curlsocktype, struct curl_sockaddr *));
CURLcode herald_curl_easy_setopt_prereq(CURL *handle, int (*fn)(void *, char *, char *, int, int));

// Sockets: TCP_CORK and TCP_NODELAY are macros of <netinet/tcp.h>. Both return setsockopt's result.
// herald_tcp_cork sets TCP_CORK; herald_tcp_push sets TCP_NODELAY, which sends what a corked socket
// holds (tcp(7)) and leaves it corked.
int herald_tcp_cork(int fd);
int herald_tcp_push(int fd);

// SQLite: SQLITE_TRANSIENT is a macro casting -1 to a function pointer.
int herald_sqlite3_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int length);
int herald_sqlite3_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *data, int length);

// OpenSSL: OPENSSL_free and BIO_get_mem_data are macros.
void herald_openssl_free(void *ptr);
long herald_bio_get_mem_data(BIO *bio, char **data);

// posix_spawn: the GNU extensions (glibc 2.34+) are declared only under _GNU_SOURCE, which Swift's
// Glibc module does not define. Both return 0 or an error number.
int herald_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from);
int herald_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path);

#endif
