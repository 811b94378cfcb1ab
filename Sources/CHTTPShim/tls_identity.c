#include "tls_identity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gnutls/x509.h>

enum { max_chain = 16 };

struct tls_identity {
    gnutls_pcert_st chain[max_chain];
    unsigned int chain_length;
    gnutls_privkey_t key;
    int64_t not_before;
    int64_t not_after;
    struct tls_identity *older; /* the retired list */
};

static int same_public_key(gnutls_pubkey_t certificate_key, gnutls_privkey_t key) {
    gnutls_pubkey_t derived;
    unsigned char first[64], second[64];
    size_t first_size = sizeof first, second_size = sizeof second;
    if (gnutls_pubkey_init(&derived) < 0) return 0;
    int same = gnutls_pubkey_import_privkey(derived, key, 0, 0) == 0 &&
               gnutls_pubkey_get_key_id(derived, GNUTLS_KEYID_USE_SHA256, first, &first_size) == 0 &&
               gnutls_pubkey_get_key_id(certificate_key, GNUTLS_KEYID_USE_SHA256, second,
                                        &second_size) == 0 &&
               first_size == second_size && memcmp(first, second, first_size) == 0;
    gnutls_pubkey_deinit(derived);
    return same;
}

/* The certificate's validity (notBefore, notAfter as seconds since 1970); both 0 when unreadable. */
static void validity(const gnutls_datum_t *der, int64_t *not_before, int64_t *not_after) {
    *not_before = 0;
    *not_after = 0;
    gnutls_x509_crt_t certificate;
    if (gnutls_x509_crt_init(&certificate) < 0) return;
    if (gnutls_x509_crt_import(certificate, der, GNUTLS_X509_FMT_DER) == 0) {
        *not_before = (int64_t)gnutls_x509_crt_get_activation_time(certificate);
        *not_after = (int64_t)gnutls_x509_crt_get_expiration_time(certificate);
    }
    gnutls_x509_crt_deinit(certificate);
}

tls_identity *tls_identity_load(const char *certificate_pem, const char *key_pem, char *error,
                                size_t error_capacity) {
    tls_identity *identity = calloc(1, sizeof *identity);
    if (identity == NULL) {
        snprintf(error, error_capacity, "out of memory");
        return NULL;
    }
    gnutls_datum_t certificate = {(unsigned char *)certificate_pem,
                                  (unsigned int)strlen(certificate_pem)};
    unsigned int length = max_chain;
    /* The leaf comes first; intermediates after it are put in order. A longer chain than we
     * hold is refused rather than cut short. */
    int status = gnutls_pcert_list_import_x509_raw(
        identity->chain, &length, &certificate, GNUTLS_X509_FMT_PEM,
        GNUTLS_X509_CRT_LIST_SORT | GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED);
    if (status == GNUTLS_E_SHORT_MEMORY_BUFFER) {
        snprintf(error, error_capacity, "the certificate file holds more than %d certificates", max_chain);
        free(identity);
        return NULL;
    }
    if (status < 0 || length == 0) {
        snprintf(error, error_capacity, "the certificate file holds no usable PEM certificate chain (%s)",
                 status < 0 ? gnutls_strerror(status) : "empty");
        free(identity);
        return NULL;
    }
    identity->chain_length = length;
    gnutls_datum_t key = {(unsigned char *)key_pem, (unsigned int)strlen(key_pem)};
    if ((status = gnutls_privkey_init(&identity->key)) < 0 ||
        (status = gnutls_privkey_import_x509_raw(identity->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(error, error_capacity, "the key file holds no usable unencrypted PEM private key (%s)",
                 gnutls_strerror(status));
        tls_identity_free(identity);
        return NULL;
    }
    if (!same_public_key(identity->chain[0].pubkey, identity->key)) {
        snprintf(error, error_capacity, "the private key does not belong to the first certificate of the chain");
        tls_identity_free(identity);
        return NULL;
    }
    validity(&identity->chain[0].cert, &identity->not_before, &identity->not_after);
    return identity;
}

void tls_identity_free(tls_identity *identity) {
    if (identity == NULL) return;
    for (unsigned int index = 0; index < identity->chain_length; index++) {
        gnutls_pcert_deinit(&identity->chain[index]);
    }
    if (identity->key != NULL) gnutls_privkey_deinit(identity->key);
    free(identity);
}

int64_t tls_identity_not_after(const tls_identity *identity) { return identity->not_after; }

int64_t tls_identity_not_before(const tls_identity *identity) { return identity->not_before; }

void tls_identity_slot_init(tls_identity_slot *slot, tls_identity *identity) {
    pthread_mutex_init(&slot->lock, NULL);
    slot->current = identity;
    slot->retired = NULL;
}

void tls_identity_slot_replace(tls_identity_slot *slot, tls_identity *identity) {
    pthread_mutex_lock(&slot->lock);
    tls_identity *previous = slot->current;
    slot->current = identity;
    if (previous != NULL) {
        previous->older = slot->retired;
        slot->retired = previous;
    }
    pthread_mutex_unlock(&slot->lock);
}

int64_t tls_identity_slot_not_after(tls_identity_slot *slot) {
    pthread_mutex_lock(&slot->lock);
    int64_t not_after = slot->current ? slot->current->not_after : 0;
    pthread_mutex_unlock(&slot->lock);
    return not_after;
}

int tls_identity_slot_select(tls_identity_slot *slot, gnutls_pcert_st **chain,
                             unsigned int *chain_length, gnutls_privkey_t *key) {
    pthread_mutex_lock(&slot->lock);
    tls_identity *identity = slot->current;
    if (identity != NULL) {
        *chain = identity->chain;
        *chain_length = identity->chain_length;
        *key = identity->key;
    }
    pthread_mutex_unlock(&slot->lock);
    return identity != NULL ? 0 : -1;
}

void tls_identity_slot_destroy(tls_identity_slot *slot) {
    tls_identity_free(slot->current);
    while (slot->retired != NULL) {
        tls_identity *older = slot->retired->older;
        tls_identity_free(slot->retired);
        slot->retired = older;
    }
    slot->current = NULL;
    pthread_mutex_destroy(&slot->lock);
}
