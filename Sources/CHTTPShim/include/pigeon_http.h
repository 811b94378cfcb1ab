#ifndef PIGEON_HTTP_H
#define PIGEON_HTTP_H

/*
 * A thin shim over libmicrohttpd in its event-driven mode: a small pool of epoll threads holds
 * every connection, and a request's handler runs elsewhere while its connection is suspended.
 * MHD_start_daemon is variadic and its access handler is called several times per request; this
 * shim hides both. Swift sees:
 *
 *   - admit: once per request, as soon as its head arrived, on an I/O thread (must not block):
 *     returns how many body bytes this request may send. A declared Content-Length above it is
 *     answered at once without reading the body; a chunked body that grows past it closes the
 *     connection. Nothing is buffered beyond it.
 *   - handler: once per request when the whole body arrived (or at once when it is known to be
 *     too large), on an I/O thread (must not block): it copies what it needs and answers later,
 *     from any thread, with exactly one pigeon_http_complete.
 *
 * Every connection must deliver each whole request (head and body) within the request deadline,
 * counted from when the server starts waiting for it (accept, or the previous response); an idle
 * keep-alive connection is closed at the same point. Connections per client address are limited.
 */

#include <stddef.h>
#include <stdint.h>

struct sockaddr;

typedef struct pigeon_http_exchange pigeon_http_exchange;
typedef struct pigeon_http_server pigeon_http_server;

typedef long (*pigeon_http_admit)(void *context, pigeon_http_exchange *exchange);
typedef void (*pigeon_http_handler)(void *context, pigeon_http_exchange *exchange);
/* Receives libmicrohttpd's own diagnostics, already formatted. */
typedef void (*pigeon_http_logger)(void *context, const char *message);

/* A network of client addresses (CIDR): `family` 4 or 6, the network's address in the first 4 or
 * 16 bytes, and how many leading bits of it count. */
typedef struct pigeon_http_network {
    uint8_t family;
    uint8_t prefix_length;
    uint8_t bytes[16];
} pigeon_http_network;

/* Whether `address` (IPv4, IPv6, or IPv4 mapped into IPv6) lies in one of `networks`. */
int pigeon_http_networks_contain(const pigeon_http_network *networks, size_t count,
                                 const struct sockaddr *address);

typedef struct pigeon_http_config {
    const char *address;                 /* IPv4 or IPv6 literal, e.g. "127.0.0.1" */
    uint16_t port;                       /* 0 picks a free port */
    unsigned int io_threads;             /* epoll threads holding the connections */
    unsigned int connection_limit;       /* concurrent connections in all */
    unsigned int per_address_limit;      /* concurrent connections per client address; 0 = none */
    unsigned int idle_timeout_seconds;   /* no byte moving this long (e.g. a reader that stalls) */
    unsigned int request_deadline_seconds; /* a whole request must arrive within this */
    /* Connections not authenticated yet — no head with an accepted client certificate (where one
     * is required) and no request whose admit called pigeon_http_authenticated: at most this many
     * at once (0 = no cap). When they are at it, a new connection makes room by cutting the oldest
     * unauthenticated connection of the address holding the most. */
    unsigned int unauthenticated_limit;
    /* The same per client address (0 = none): beyond it a new connection cuts one of that
     * address's (first one that sent wrong credentials, then the oldest). */
    unsigned int unauthenticated_per_address_limit;
    /* A connection that sent no head passing the checks this long after it opened is cut
     * (0 = only the request deadline). */
    unsigned int unauthenticated_deadline_seconds;
    /* Client addresses served (copied); others are refused at accept before anything is counted.
     * 0 networks: every address. */
    const pigeon_http_network *allowed_networks;
    size_t allowed_network_count;
    const char *tls_certificate_pem;     /* NULL for plain HTTP */
    const char *tls_key_pem;
    const char *tls_client_ca_pem;       /* non-NULL: clients must present a certificate it signed */
    pigeon_http_admit admit;
    pigeon_http_handler handler;
    pigeon_http_logger logger;
    void *context;
} pigeon_http_config;

/* Starts listening. Returns 0 and sets *server, or -1 and writes a reason into error. */
int pigeon_http_start(const pigeon_http_config *config, pigeon_http_server **server,
                      char *error, size_t error_capacity);
uint16_t pigeon_http_bound_port(const pigeon_http_server *server);
/* Stops accepting new connections; open ones go on. */
void pigeon_http_quiesce(pigeon_http_server *server);
/* Requests whose handler has not completed yet. */
unsigned int pigeon_http_in_flight(pigeon_http_server *server);
/* Open connections. */
unsigned int pigeon_http_connections(pigeon_http_server *server);
/* Open connections that have not authenticated (see unauthenticated_limit). */
unsigned int pigeon_http_unauthenticated_connections(pigeon_http_server *server);
/* Connections refused at accept because the unauthenticated ones were at their cap with none to
 * cut (rare: every one is being opened or closed), and cut because
 * they did not authenticate in time, since start. */
unsigned long pigeon_http_unauthenticated_refusals(pigeon_http_server *server);
unsigned long pigeon_http_unauthenticated_closures(pigeon_http_server *server);
/* Unauthenticated connections cut to make room for a new one, and connections refused because
 * their address is not among the allowed networks, since start. */
unsigned long pigeon_http_unauthenticated_evictions(pigeon_http_server *server);
unsigned long pigeon_http_allowlist_refusals(pigeon_http_server *server);
/* Connections closed because a request did not arrive within the deadline, so far. */
unsigned long pigeon_http_deadline_closures(pigeon_http_server *server);
/* HTTPS: new connections present this certificate chain (PEM, leaf first) and key from now on;
 * open ones keep theirs. Returns 0, or -1 with a reason in error (the old certificate stays). */
int pigeon_http_replace_certificate(pigeon_http_server *server, const char *certificate_pem,
                                    const char *key_pem, char *error, size_t error_capacity);
/* Checks a certificate chain and key as pigeon_http_replace_certificate would, without a server:
 * 0 and the leaf's notBefore and notAfter, or -1 with a reason in error. */
int pigeon_http_check_certificate(const char *certificate_pem, const char *key_pem,
                                  int64_t *not_before, int64_t *not_after, char *error,
                                  size_t error_capacity);
/* HTTPS: the presented leaf certificate's notAfter (seconds since 1970); 0 for plain HTTP. */
int64_t pigeon_http_certificate_not_after(pigeon_http_server *server);
/* Answers every request still in its handler with 503 (their later completions are dropped),
 * closes every connection and frees the server. */
void pigeon_http_stop(pigeon_http_server *server);

/* Request accessors: valid only during admit and handler. */
const char *pigeon_http_method(const pigeon_http_exchange *exchange);
const char *pigeon_http_path(const pigeon_http_exchange *exchange);
/* The path as the client sent it (percent-encoded; handlers decode each segment once). */
/* The query arguments re-joined as "k=v&k2", still percent-encoded ('+' already a space), "" if none. */
const char *pigeon_http_query(const pigeon_http_exchange *exchange);
/* Case-insensitive header lookup; NULL if absent. */
const char *pigeon_http_header(const pigeon_http_exchange *exchange, const char *name);
/* Hands the body's malloc'd buffer to the caller, who frees it; the exchange forgets it. NULL
 * when there is no body. */
uint8_t *pigeon_http_take_body(pigeon_http_exchange *exchange, size_t *length);
/* 1 when the body exceeded what admit allowed (the body is then empty). */
int pigeon_http_body_too_large(const pigeon_http_exchange *exchange);
/* The peer's address as text, "" if unknown. */
const char *pigeon_http_peer(const pigeon_http_exchange *exchange);
/* During admit: the request carries valid credentials, so its connection no longer counts among
 * the unauthenticated ones (it is neither capped nor evicted as one). */
void pigeon_http_authenticated(pigeon_http_exchange *exchange);
/* During admit: the request carries wrong credentials, so its connection is the first of its
 * address to be cut when a new connection needs room among the unauthenticated ones. */
void pigeon_http_refused_credentials(pigeon_http_exchange *exchange);

/* Answers a request handed to the handler, from any thread, exactly once. headers holds
 * header_count name/value pairs (names[i], values[i]). drop_connection = 1 closes the connection
 * without any response. A request whose body was refused or too large is answered with
 * "Connection: close" (its unread body must not be taken for the next request). */
void pigeon_http_complete(pigeon_http_exchange *exchange, unsigned int status,
                          const uint8_t *body, size_t length, const char *const *names,
                          const char *const *values, size_t header_count, int drop_connection);

/* Called once when the server no longer needs a body handed over without a copy. */
typedef void (*pigeon_http_body_release)(void *owner);

/* pigeon_http_complete for a body the server sends from where it is, without a copy (a large
 * answer): `body` stays valid and unchanged until `release(owner)` is called, exactly once,
 * from any thread — also when the response is never sent. */
void pigeon_http_complete_owned(pigeon_http_exchange *exchange, unsigned int status,
                                const uint8_t *body, size_t length, pigeon_http_body_release release,
                                void *owner, const char *const *names, const char *const *values,
                                size_t header_count, int drop_connection);

#endif
