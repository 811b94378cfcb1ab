#ifndef PIGEON_H2_H
#define PIGEON_H2_H

/*
 * A thin shim over libcurl's multi interface for HTTP/2 over TLS. curl_easy_setopt and
 * curl_multi_setopt are variadic, so every option is set here; Swift sees two opaque types and
 * plain C values. One thread drives a client and creates, adds and recycles its transfers.
 */

#include <stddef.h>
#include <stdint.h>

typedef struct pigeon_h2_client pigeon_h2_client;
typedef struct pigeon_h2_transfer pigeon_h2_transfer;

typedef struct pigeon_h2_tls {
    const char *ca_file;          /* extra CA bundle, or NULL for the system's */
    const char *client_cert;      /* client certificate file, or NULL */
    const char *client_cert_type; /* "P12" or "PEM" */
    const char *client_key;       /* PEM private key file for a PEM certificate, or NULL */
    const char *client_key_password;
} pigeon_h2_tls;

/* A client multiplexing up to max_streams streams on each of up to max_connections connections
 * per host. Returns NULL on failure. */
pigeon_h2_client *pigeon_h2_client_new(long max_connections, long max_streams);
void pigeon_h2_client_free(pigeon_h2_client *client);
/* Adds a transfer (call from the driving thread). Returns 0 or a CURLMcode. */
int pigeon_h2_client_add(pigeon_h2_client *client, pigeon_h2_transfer *transfer);
/* Waits up to timeout_ms for activity, then advances every transfer. Returns 0 or a CURLMcode. */
int pigeon_h2_client_run(pigeon_h2_client *client, int timeout_ms);
/* The next finished transfer (removed from the client), or NULL. */
pigeon_h2_transfer *pigeon_h2_client_next_done(pigeon_h2_client *client);
/* Interrupts pigeon_h2_client_run from any thread. */
void pigeon_h2_client_wakeup(pigeon_h2_client *client);
/* Takes a running transfer off the client unfinished; its result becomes CURLE_ABORTED_BY_CALLBACK. */
void pigeon_h2_client_abandon(pigeon_h2_client *client, pigeon_h2_transfer *transfer);
/* Connections opened so far (a counter the shim keeps through CURLOPT_OPENSOCKETFUNCTION). */
long pigeon_h2_client_connections_opened(pigeon_h2_client *client);
/* Hands a finished transfer (no longer on the client) back for reuse by the client's next
 * pigeon_h2_transfer_new, or frees it when the client keeps enough already. Driving thread only. */
void pigeon_h2_client_recycle(pigeon_h2_client *client, pigeon_h2_transfer *transfer);
/* Finished transfers the client keeps for reuse. */
int pigeon_h2_client_idle_transfers(const pigeon_h2_client *client);
/* Frees every finished transfer the client keeps (a client gone quiet). Driving thread only. */
void pigeon_h2_client_trim(pigeon_h2_client *client);

/* A POST of body to url with "Name: value" headers; context is returned untouched. With
 * fresh_connection the request gets a connection of its own, never reused, so that libcurl never
 * re-sends it (for requests that must not be repeated). Takes one of client's idle transfers when
 * it has one (client may be NULL; driving thread only): one last set up for the same method,
 * connection rule, timeout and TLS strings (the same pointers) gets only its URL, body and headers
 * set; any other is reset to libcurl's defaults and set up whole. Returns NULL and writes a
 * reason into error on failure. */
pigeon_h2_transfer *pigeon_h2_transfer_new(pigeon_h2_client *client, const char *method, const char *url,
                                           const char *const *headers, size_t header_count, const uint8_t *body,
                                           size_t body_length, const pigeon_h2_tls *tls,
                                           long timeout_ms, int fresh_connection, void *context, char *error,
                                           size_t error_capacity);
void pigeon_h2_transfer_free(pigeon_h2_transfer *transfer);
void *pigeon_h2_transfer_context(const pigeon_h2_transfer *transfer);
/* The CURLcode of a finished transfer (0 on success) and curl's error text. */
int pigeon_h2_transfer_result(const pigeon_h2_transfer *transfer);
const char *pigeon_h2_transfer_error(const pigeon_h2_transfer *transfer);
long pigeon_h2_transfer_status(const pigeon_h2_transfer *transfer);
/* The HTTP version curl used: 2 for HTTP/2, 1 for HTTP/1.x, 0 if unknown. */
int pigeon_h2_transfer_http_version(const pigeon_h2_transfer *transfer);
const uint8_t *pigeon_h2_transfer_body(const pigeon_h2_transfer *transfer, size_t *length);
/* A response header's value (case-insensitive name), or NULL. */
const char *pigeon_h2_transfer_header(const pigeon_h2_transfer *transfer, const char *name);

/* Names the calling thread (the first 15 bytes of `name`), as /proc and top show it. */
void pigeon_h2_name_current_thread(const char *name);

#endif
