#ifndef PIGEON_TLS_IDENTITY_H
#define PIGEON_TLS_IDENTITY_H

/*
 * The certificate chain and private key a listener presents, replaceable while it serves: each
 * TLS handshake asks the slot for the current identity, so a renewed certificate reaches new
 * connections without closing the listener or the connections already open.
 */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

typedef struct tls_identity tls_identity;

/* Parses a PEM chain (leaf first, at most 16 certificates) and its PEM private key, and checks
 * that the key belongs to the leaf. Returns NULL and writes a reason into error otherwise. */
tls_identity *tls_identity_load(const char *certificate_pem, const char *key_pem, char *error,
                                size_t error_capacity);
void tls_identity_free(tls_identity *identity);
/* The leaf's notAfter, in seconds since 1970. */
int64_t tls_identity_not_after(const tls_identity *identity);
/* The leaf certificate's notBefore (seconds since 1970). */
int64_t tls_identity_not_before(const tls_identity *identity);

/* The identity in use, and the ones it replaced: a handshake that picked one of those may still
 * be under way, so they are kept until the slot is destroyed (a few KiB per reload). */
typedef struct tls_identity_slot {
    pthread_mutex_t lock;
    tls_identity *current;
    tls_identity *retired;
} tls_identity_slot;

void tls_identity_slot_init(tls_identity_slot *slot, tls_identity *identity);
/* Makes identity the current one; the previous one is retired. */
void tls_identity_slot_replace(tls_identity_slot *slot, tls_identity *identity);
/* The current leaf's notAfter (0 when there is none). */
int64_t tls_identity_slot_not_after(tls_identity_slot *slot);
/* Fills GnuTLS's certificate-retrieval answer with the current identity; -1 when there is none. */
int tls_identity_slot_select(tls_identity_slot *slot, gnutls_pcert_st **chain,
                             unsigned int *chain_length, gnutls_privkey_t *key);
void tls_identity_slot_destroy(tls_identity_slot *slot);

#endif
