/* The EVP floor of one Web Push message (RFC 8291, aes128gcm): what a C program reaches through the
 * OpenSSL 3 EVP API alone, with every context that can be reused reused. It is the reference that shows
 * how much of `openssl speed ecdhp256` a pipeline that also generates the ephemeral key can reach.
 *
 * Per message: EVP_PKEY_generate (pooled keygen context, group set once), the ephemeral public point
 * (EVP_PKEY_get_octet_string_param), ECDH with a peer validated once (EVP_PKEY_derive_set_peer_ex(.., 0)),
 * a 16-byte salt (RAND_bytes), the RFC 8291 key schedule as five HMAC-SHA-256 (one EVP_MAC_CTX, re-keyed
 * by EVP_MAC_init), and AES-128-GCM of a 3 KB record (or RECORD_BYTES) (one EVP_CIPHER_CTX, cipher fetched once).
 *
 * usage: webpush_evp_floor SECONDS [RECORD_BYTES]   (default 3072)
 *        prints {"messages":…,"cpu_seconds":…,"per_second":…}
 * build: gcc -O2 -o webpush_evp_floor webpush_evp_floor.c -lcrypto */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static EVP_MAC_CTX *hmac;
static OSSL_PARAM hmac_params[2];

static int mac(const unsigned char *key, size_t key_len, const unsigned char *a, size_t a_len,
               const unsigned char *b, size_t b_len, unsigned char out[32]) {
    size_t n = 0;
    if (EVP_MAC_init(hmac, key, key_len, hmac_params) != 1) return 0;
    if (a_len && EVP_MAC_update(hmac, a, a_len) != 1) return 0;
    if (b_len && EVP_MAC_update(hmac, b, b_len) != 1) return 0;
    return EVP_MAC_final(hmac, out, &n, 32) == 1 && n == 32;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    size_t record_len = argc > 2 ? (size_t)atol(argv[2]) : 3 * 1024;
    if (record_len < 1 || record_len > 4096) return 1;
    EVP_PKEY_CTX *keygen = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (!keygen || EVP_PKEY_keygen_init(keygen) != 1 || EVP_PKEY_CTX_set_group_name(keygen, "prime256v1") != 1)
        return 1;
    EVP_PKEY *subscriber = NULL;
    if (EVP_PKEY_generate(keygen, &subscriber) != 1) return 1;
    unsigned char ua_public[65], auth[16], record[4096], out[4096 + 16], tag[16];
    size_t ua_len = 0;
    EVP_PKEY_get_octet_string_param(subscriber, OSSL_PKEY_PARAM_PUB_KEY, ua_public, sizeof ua_public, &ua_len);
    RAND_bytes(auth, sizeof auth);
    memset(record, 0x41, record_len);
    record[record_len - 1] = 0x02;

    EVP_MAC *hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    hmac = EVP_MAC_CTX_new(hmac_alg);
    hmac_params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0);
    hmac_params[1] = OSSL_PARAM_construct_end();
    EVP_CIPHER *aes = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    EVP_CIPHER_CTX *cipher = EVP_CIPHER_CTX_new();
    if (!hmac || !aes || !cipher) return 1;

    unsigned char info[14 + 65 + 65 + 1];
    memcpy(info, "WebPush: info", 14); /* includes the NUL */
    memcpy(info + 14, ua_public, 65);
    const unsigned char cek_info[] = "Content-Encoding: aes128gcm\0\1";
    const unsigned char nonce_info[] = "Content-Encoding: nonce\0\1";

    long messages = 0;
    double start = cpu_now(), elapsed = 0;
    while (elapsed < seconds) {
        for (int i = 0; i < 100; i++) {
            EVP_PKEY *ephemeral = NULL;
            unsigned char as_public[65], secret[32], salt[16], prk_key[32], ikm[32], prk[32], cek[32], nonce[32];
            size_t as_len = 0, secret_len = sizeof secret;
            if (EVP_PKEY_generate(keygen, &ephemeral) != 1) return 2;
            if (EVP_PKEY_get_octet_string_param(ephemeral, OSSL_PKEY_PARAM_PUB_KEY, as_public, sizeof as_public,
                                                &as_len) != 1 || as_len != 65)
                return 2;
            EVP_PKEY_CTX *derive = EVP_PKEY_CTX_new_from_pkey(NULL, ephemeral, NULL);
            if (!derive || EVP_PKEY_derive_init(derive) != 1 || EVP_PKEY_derive_set_peer_ex(derive, subscriber, 0) != 1 ||
                EVP_PKEY_derive(derive, secret, &secret_len) != 1)
                return 2;
            EVP_PKEY_CTX_free(derive);
            EVP_PKEY_free(ephemeral);
            if (RAND_bytes(salt, sizeof salt) != 1) return 2;
            /* RFC 8291 §3.3/3.4: PRK_key, IKM, PRK, CEK, NONCE (each HKDF-Expand is one block). */
            memcpy(info + 14 + 65, as_public, 65);
            info[sizeof info - 1] = 1;
            if (!mac(auth, sizeof auth, secret, sizeof secret, NULL, 0, prk_key) ||
                !mac(prk_key, 32, info, sizeof info, NULL, 0, ikm) || !mac(salt, sizeof salt, ikm, 32, NULL, 0, prk) ||
                !mac(prk, 32, cek_info, sizeof cek_info - 1, NULL, 0, cek) ||
                !mac(prk, 32, nonce_info, sizeof nonce_info - 1, NULL, 0, nonce))
                return 2;
            int len = 0, fin = 0;
            if (EVP_EncryptInit_ex2(cipher, aes, cek, nonce, NULL) != 1 ||
                EVP_EncryptUpdate(cipher, out, &len, record, (int)record_len) != 1 ||
                EVP_EncryptFinal_ex(cipher, out + len, &fin) != 1 ||
                EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1)
                return 2;
        }
        messages += 100;
        elapsed = cpu_now() - start;
    }
    printf("{\"messages\":%ld,\"cpu_seconds\":%.3f,\"per_second\":%.0f}\n", messages, elapsed, messages / elapsed);
    return 0;
}
