#ifndef PIGEON_HTTP_H
#define PIGEON_HTTP_H

/*
 * A thin shim over libmicrohttpd. MHD_start_daemon is variadic and its access handler is called
 * several times per request; this shim hides both. Swift sees one call per complete request (an
 * "exchange") with the body already collected and bounded, and answers it with typed functions.
 */

#include <stddef.h>
#include <stdint.h>

typedef struct pigeon_http_exchange pigeon_http_exchange;
typedef struct pigeon_http_server pigeon_http_server;

/* Called once per request, on the connection's own thread, after the whole body arrived
 * (or as soon as it is known to exceed the limit). The handler answers with pigeon_http_respond. */
typedef void (*pigeon_http_handler)(void *context, pigeon_http_exchange *exchange);

/* Receives libmicrohttpd's own diagnostics, already formatted. */
typedef void (*pigeon_http_logger)(void *context, const char *message);

typedef struct pigeon_http_config {
    const char *address;              /* IPv4 or IPv6 literal, e.g. "127.0.0.1" */
    uint16_t port;                    /* 0 picks a free port */
    unsigned int connection_limit;    /* concurrent connections (one thread each) */
    unsigned int idle_timeout_seconds;/* a connection idle (or stalled mid-request) this long is closed */
    size_t max_body_bytes;            /* larger bodies are flagged, never buffered */
    const char *tls_certificate_pem;  /* NULL for plain HTTP */
    const char *tls_key_pem;
    pigeon_http_handler handler;
    pigeon_http_logger logger;
    void *context;
} pigeon_http_config;

/* Starts listening. Returns 0 and sets *server, or -1 and writes a reason into error. */
int pigeon_http_start(const pigeon_http_config *config, pigeon_http_server **server,
                      char *error, size_t error_capacity);
uint16_t pigeon_http_bound_port(const pigeon_http_server *server);
/* Stops accepting new connections; open ones finish. */
void pigeon_http_quiesce(pigeon_http_server *server);
/* Closes every connection and frees the server. */
void pigeon_http_stop(pigeon_http_server *server);

/* Request accessors: valid only while the handler runs. */
const char *pigeon_http_method(const pigeon_http_exchange *exchange);
const char *pigeon_http_path(const pigeon_http_exchange *exchange);
/* The query arguments re-joined as "k=v&k2" (values already URL-decoded), "" if none. */
const char *pigeon_http_query(const pigeon_http_exchange *exchange);
/* Case-insensitive header lookup; NULL if absent. */
const char *pigeon_http_header(const pigeon_http_exchange *exchange, const char *name);
const uint8_t *pigeon_http_body(const pigeon_http_exchange *exchange, size_t *length);
/* 1 when the body exceeded max_body_bytes (the body is then empty). */
int pigeon_http_body_too_large(const pigeon_http_exchange *exchange);
/* The peer's address as text, "" if unknown. */
const char *pigeon_http_peer(const pigeon_http_exchange *exchange);

/* Sets the response (body copied). Returns 0, or -1 if out of memory. */
int pigeon_http_respond(pigeon_http_exchange *exchange, unsigned int status,
                        const uint8_t *body, size_t length);
/* Adds a header to the response set by pigeon_http_respond. Returns 0 or -1. */
int pigeon_http_add_header(pigeon_http_exchange *exchange, const char *name, const char *value);

#endif
