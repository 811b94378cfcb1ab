#ifndef PIGEON_H2S_H
#define PIGEON_H2S_H

/*
 * A small HTTP/2-over-TLS server (libnghttp2 + OpenSSL) for `pigeon simulate`: one thread, a
 * poll loop, one nghttp2 session per connection. Each complete request is handed to a handler
 * that fills in the response synchronously; the shim copies what it needs.
 */

#include <stddef.h>
#include <stdint.h>

typedef struct pigeon_h2s_server pigeon_h2s_server;

typedef struct pigeon_h2s_request {
    const char *method;
    const char *path;
    const char *authority;
    const char *const *header_names;   /* lower-case, without pseudo-headers */
    const char *const *header_values;
    size_t header_count;
    const uint8_t *body;
    size_t body_length;
    const char *client_subject;        /* verified client certificate's subject, or NULL */
    uint64_t connection_id;
} pigeon_h2s_request;

enum {
    PIGEON_H2S_RESPOND = 0,
    PIGEON_H2S_DROP_CONNECTION = 1,    /* close the TCP connection without answering */
    PIGEON_H2S_GOAWAY = 2,             /* answer, then send GOAWAY */
    PIGEON_H2S_STREAM_LIMIT_ONE = 3    /* answer, then lower SETTINGS_MAX_CONCURRENT_STREAMS to 1 */
};

typedef struct pigeon_h2s_response {
    int status;
    const char *const *header_names;
    const char *const *header_values;
    size_t header_count;
    const uint8_t *body;
    size_t body_length;
    int action;
    unsigned delay_ms;                 /* answer this much later (the poll loop keeps serving) */
} pigeon_h2s_response;

typedef struct pigeon_h2s_exchange pigeon_h2s_exchange;

/* Called for each complete request; answers by calling pigeon_h2s_respond before returning
 * (a request left unanswered gets 500). */
typedef void (*pigeon_h2s_handler)(void *context, const pigeon_h2s_request *request,
                                   pigeon_h2s_exchange *exchange);

/* Answers the request, at once or after response->delay_ms; everything is copied before this
 * returns. A delayed answer to a stream the client reset meanwhile is dropped. */
void pigeon_h2s_respond(pigeon_h2s_exchange *exchange, const pigeon_h2s_response *response);

typedef struct pigeon_h2s_config {
    const char *address;          /* IPv4 literal */
    uint16_t port;                /* 0 picks a free port */
    const char *certificate_file; /* PEM chain */
    const char *key_file;         /* PEM key */
    const char *client_ca_file;   /* if set, client certificates are requested and verified */
    int enforce_reset_limit;      /* nghttp2's rapid-reset limit as Debian ships it (1000, 33/s) */
    pigeon_h2s_handler handler;
    void *context;
} pigeon_h2s_config;

pigeon_h2s_server *pigeon_h2s_start(const pigeon_h2s_config *config, char *error, size_t error_capacity);
uint16_t pigeon_h2s_port(const pigeon_h2s_server *server);
/* Counters: connections accepted, GOAWAY frames sent (by us or by nghttp2's limits). */
uint64_t pigeon_h2s_connections(const pigeon_h2s_server *server);
void pigeon_h2s_stop(pigeon_h2s_server *server);

#endif
