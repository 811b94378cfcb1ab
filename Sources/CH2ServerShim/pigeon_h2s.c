#define _GNU_SOURCE
#include "pigeon_h2s.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define MAX_HEADERS 64
#define MAX_BODY (1 << 20)
#define MAX_CONNECTIONS 1024

typedef struct stream {
    char *method, *path, *authority;
    char *names[MAX_HEADERS];
    char *values[MAX_HEADERS];
    size_t header_count;
    uint8_t *body;
    size_t body_length;
    uint8_t *response;
    size_t response_length, response_offset;
} stream;

/* A response held back by delay_ms, with its own copy of everything. */
typedef struct deferred {
    struct deferred *next;
    int32_t stream_id;
    stream *stream;
    uint64_t due_ms;
    int status, action;
    char **names, **values;
    size_t header_count;
    uint8_t *body;
    size_t body_length;
} deferred;

typedef struct connection {
    int fd;
    deferred *deferred;
    SSL *ssl;
    nghttp2_session *session;
    int ready;
    int closing;
    uint8_t *out;
    size_t out_length, out_capacity;
    char subject[256];
    int has_subject;
    uint64_t id;
    struct pigeon_h2s_server *server;
} connection;

struct pigeon_h2s_server {
    int listener;
    int wake[2];
    SSL_CTX *tls;
    pthread_t thread;
    pigeon_h2s_handler handler;
    void *context;
    int enforce_reset_limit;
    uint16_t port;
    connection *connections[MAX_CONNECTIONS];
    size_t connection_count;
    _Atomic uint64_t accepted;
};

static char *copy(const uint8_t *bytes, size_t length) {
    char *text = malloc(length + 1);
    if (text == NULL) return NULL;
    memcpy(text, bytes, length);
    text[length] = '\0';
    return text;
}

static void stream_free(stream *s) {
    if (s == NULL) return;
    free(s->method);
    free(s->path);
    free(s->authority);
    for (size_t i = 0; i < s->header_count; i++) {
        free(s->names[i]);
        free(s->values[i]);
    }
    free(s->body);
    free(s->response);
    free(s);
}

static ssize_t read_response(nghttp2_session *session, int32_t stream_id, uint8_t *buffer,
                             size_t length, uint32_t *flags, nghttp2_data_source *source,
                             void *user) {
    (void)session;
    (void)stream_id;
    (void)user;
    stream *s = source->ptr;
    size_t remaining = s->response_length - s->response_offset;
    size_t n = remaining < length ? remaining : length;
    memcpy(buffer, s->response + s->response_offset, n);
    s->response_offset += n;
    if (s->response_offset == s->response_length) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

struct pigeon_h2s_exchange {
    connection *connection;
    int32_t stream_id;
    stream *stream;
    int answered;
};

static uint64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

static void deferred_free(deferred *d) {
    for (size_t i = 0; i < d->header_count; i++) {
        free(d->names[i]);
        free(d->values[i]);
    }
    free(d->names);
    free(d->values);
    free(d->body);
    free(d);
}

/* Copies the response and queues it on the connection; 0 on success. */
static int defer_response(pigeon_h2s_exchange *exchange, const pigeon_h2s_response *response) {
    deferred *d = calloc(1, sizeof *d);
    if (d == NULL) return -1;
    d->stream_id = exchange->stream_id;
    d->stream = exchange->stream;
    d->due_ms = now_ms() + response->delay_ms;
    d->status = response->status;
    d->action = response->action;
    d->names = calloc(response->header_count + 1, sizeof(char *));
    d->values = calloc(response->header_count + 1, sizeof(char *));
    d->body = response->body_length ? malloc(response->body_length) : NULL;
    if (d->names == NULL || d->values == NULL || (response->body_length && d->body == NULL)) {
        deferred_free(d);
        return -1;
    }
    for (size_t i = 0; i < response->header_count; i++, d->header_count++) {
        d->names[i] = strdup(response->header_names[i]);
        d->values[i] = strdup(response->header_values[i]);
    }
    if (response->body_length) memcpy(d->body, response->body, response->body_length);
    d->body_length = response->body_length;
    d->next = exchange->connection->deferred;
    exchange->connection->deferred = d;
    return 0;
}

/* Sends the connection's deferred responses that are due. */
static void send_due(connection *c, uint64_t now) {
    deferred **link = &c->deferred;
    while (*link != NULL) {
        deferred *d = *link;
        if (d->due_ms > now) {
            link = &d->next;
            continue;
        }
        *link = d->next;
        /* The client may have reset the stream meanwhile; its memory is then gone. */
        if (nghttp2_session_get_stream_user_data(c->session, d->stream_id) == d->stream) {
            pigeon_h2s_exchange exchange = {c, d->stream_id, d->stream, 0};
            pigeon_h2s_response response = {
                .status = d->status, .header_names = (const char *const *)d->names,
                .header_values = (const char *const *)d->values, .header_count = d->header_count,
                .body = d->body, .body_length = d->body_length, .action = d->action};
            pigeon_h2s_respond(&exchange, &response);
        }
        deferred_free(d);
    }
}

void pigeon_h2s_respond(pigeon_h2s_exchange *exchange, const pigeon_h2s_response *response) {
    if (exchange->answered) return;
    exchange->answered = 1;
    if (response->delay_ms > 0 && defer_response(exchange, response) == 0) return;
    connection *c = exchange->connection;
    stream *s = exchange->stream;
    if (response->action == PIGEON_H2S_DROP_CONNECTION) {
        c->closing = 1;
        return;
    }
    nghttp2_nv headers[MAX_HEADERS + 1];
    char status[8];
    snprintf(status, sizeof status, "%d", response->status);
    headers[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)status, 7, strlen(status),
                              NGHTTP2_NV_FLAG_NONE};
    size_t count = 1;
    for (size_t i = 0; i < response->header_count && count <= MAX_HEADERS; i++, count++) {
        headers[count] = (nghttp2_nv){(uint8_t *)response->header_names[i],
                                      (uint8_t *)response->header_values[i],
                                      strlen(response->header_names[i]),
                                      strlen(response->header_values[i]), NGHTTP2_NV_FLAG_NONE};
    }
    nghttp2_data_provider provider;
    nghttp2_data_provider *body = NULL;
    if (response->body_length > 0) {
        s->response = malloc(response->body_length);
        if (s->response != NULL) {
            memcpy(s->response, response->body, response->body_length);
            s->response_length = response->body_length;
            provider.source.ptr = s;
            provider.read_callback = read_response;
            body = &provider;
        }
    }
    /* nghttp2_submit_response copies every name/value pair. */
    nghttp2_submit_response(c->session, exchange->stream_id, headers, count, body);
    if (response->action == PIGEON_H2S_STREAM_LIMIT_ONE) {
        nghttp2_settings_entry one[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1}};
        nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, one, 1);
    }
    if (response->action == PIGEON_H2S_GOAWAY) {
        nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(c->session), NGHTTP2_NO_ERROR,
                              NULL, 0);
    }
}

static void dispatch(connection *c, int32_t stream_id, stream *s) {
    pigeon_h2s_request request = {
        .method = s->method ? s->method : "",
        .path = s->path ? s->path : "",
        .authority = s->authority ? s->authority : "",
        .header_names = (const char *const *)s->names,
        .header_values = (const char *const *)s->values,
        .header_count = s->header_count,
        .body = s->body,
        .body_length = s->body_length,
        .client_subject = c->has_subject ? c->subject : NULL,
        .connection_id = c->id,
    };
    pigeon_h2s_exchange exchange = {c, stream_id, s, 0};
    c->server->handler(c->server->context, &request, &exchange);
    if (!exchange.answered) {
        pigeon_h2s_response fallback = {.status = 500};
        pigeon_h2s_respond(&exchange, &fallback);
    }
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    (void)user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    stream *s = calloc(1, sizeof *s);
    if (s == NULL) return NGHTTP2_ERR_CALLBACK_FAILURE;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, s);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t name_length, const uint8_t *value, size_t value_length, uint8_t flags,
                     void *user) {
    (void)flags;
    (void)user;
    stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (s == NULL) return 0;
    if (name_length == 7 && memcmp(name, ":method", 7) == 0) {
        free(s->method);
        s->method = copy(value, value_length);
    } else if (name_length == 5 && memcmp(name, ":path", 5) == 0) {
        free(s->path);
        s->path = copy(value, value_length);
    } else if (name_length == 10 && memcmp(name, ":authority", 10) == 0) {
        free(s->authority);
        s->authority = copy(value, value_length);
    } else if (name_length > 0 && name[0] != ':' && s->header_count < MAX_HEADERS) {
        s->names[s->header_count] = copy(name, name_length);
        s->values[s->header_count] = copy(value, value_length);
        s->header_count++;
    }
    return 0;
}

static int on_data(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                   const uint8_t *data, size_t length, void *user) {
    (void)flags;
    (void)user;
    stream *s = nghttp2_session_get_stream_user_data(session, stream_id);
    if (s == NULL) return 0;
    if (s->body_length + length > MAX_BODY) {
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    uint8_t *grown = realloc(s->body, s->body_length + length);
    if (grown == NULL) return NGHTTP2_ERR_CALLBACK_FAILURE;
    memcpy(grown + s->body_length, data, length);
    s->body = grown;
    s->body_length += length;
    return 0;
}

static int on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    connection *c = user;
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (s != NULL) dispatch(c, frame->hd.stream_id, s);
    }
    return 0;
}

static int on_close(nghttp2_session *session, int32_t stream_id, uint32_t code, void *user) {
    (void)code;
    (void)user;
    stream *s = nghttp2_session_get_stream_user_data(session, stream_id);
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    stream_free(s);
    return 0;
}

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *out_length,
                       const unsigned char *in, unsigned int in_length, void *arg) {
    (void)ssl;
    (void)arg;
    if (nghttp2_select_next_protocol((unsigned char **)out, out_length, in, in_length) != 1) {
        return SSL_TLSEXT_ERR_NOACK;
    }
    return SSL_TLSEXT_ERR_OK;
}

static int accept_any(int preverified, X509_STORE_CTX *store) {
    (void)store;
    return preverified;
}

/* `linger`: wait for the client's side to close (see below); not when the server stops. */
static void connection_close(connection *c, int linger) {
    while (c->deferred != NULL) {
        deferred *next = c->deferred->next;
        deferred_free(c->deferred);
        c->deferred = next;
    }
    if (c->session) nghttp2_session_del(c->session);
    if (c->ssl) SSL_free(c->ssl);
    /* A lingering close, as servers do: our FIN goes after the answers already written, and
     * what the client sent meanwhile is read and dropped until it closes too (2 s at most: the
     * simulator's one thread waits meanwhile), so close() does not reset
     * the connection (a reset can discard answers the client has not read yet, and it would
     * send those pushes again). */
    shutdown(c->fd, SHUT_WR);
    if (!linger) {
        close(c->fd);
        free(c->out);
        free(c);
        return;
    }
    int flags = fcntl(c->fd, F_GETFL, 0);
    if (flags >= 0) fcntl(c->fd, F_SETFL, flags | O_NONBLOCK);
    uint64_t until = now_ms() + 2000;
    char discard[16384];
    for (;;) {
        ssize_t n = read(c->fd, discard, sizeof discard);
        if (n == 0) break;
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
            uint64_t now = now_ms();
            if (now >= until) break;
            int left = (int)(until - now);
            struct pollfd wait = {.fd = c->fd, .events = POLLIN};
            poll(&wait, 1, left);
        }
    }
    close(c->fd);
    free(c->out);
    free(c);
}

static int start_session(connection *c) {
    const unsigned char *protocol = NULL;
    unsigned int length = 0;
    SSL_get0_alpn_selected(c->ssl, &protocol, &length);
    if (length != 2 || memcmp(protocol, "h2", 2) != 0) return -1;
    X509 *peer = SSL_get1_peer_certificate(c->ssl);
    if (peer != NULL) {
        if (SSL_get_verify_result(c->ssl) == X509_V_OK) {
            X509_NAME_oneline(X509_get_subject_name(peer), c->subject, sizeof c->subject);
            c->has_subject = 1;
        }
        X509_free(peer);
    }
    nghttp2_session_callbacks *callbacks;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
    nghttp2_option *option;
    nghttp2_option_new(&option);
    if (!c->server->enforce_reset_limit) {
        nghttp2_option_set_stream_reset_rate_limit(option, UINT64_C(1) << 40, UINT64_C(1) << 40);
    }
    int status = nghttp2_session_server_new2(&c->session, callbacks, c, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    if (status != 0) return -1;
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 1);
    return 0;
}

/* Moves nghttp2's pending output to the socket. Returns -1 when the connection is done. */
static int flush(connection *c) {
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->session, &data);
        if (n < 0) return -1;
        if (n == 0) break;
        if (c->out_length + (size_t)n > c->out_capacity) {
            size_t capacity = c->out_capacity ? c->out_capacity * 2 : 16384;
            while (capacity < c->out_length + (size_t)n) capacity *= 2;
            uint8_t *grown = realloc(c->out, capacity);
            if (grown == NULL) return -1;
            c->out = grown;
            c->out_capacity = capacity;
        }
        memcpy(c->out + c->out_length, data, (size_t)n);
        c->out_length += (size_t)n;
    }
    while (c->out_length > 0) {
        int written = SSL_write(c->ssl, c->out, (int)c->out_length);
        if (written <= 0) {
            int error = SSL_get_error(c->ssl, written);
            if (error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ) return 0;
            return -1;
        }
        memmove(c->out, c->out + written, c->out_length - (size_t)written);
        c->out_length -= (size_t)written;
    }
    if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session)) return -1;
    return 0;
}

/* Handles readiness on one connection. Returns -1 when it should be closed. */
static int service(connection *c) {
    if (!c->ready) {
        int result = SSL_do_handshake(c->ssl);
        if (result != 1) {
            int error = SSL_get_error(c->ssl, result);
            if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return 0;
            ERR_clear_error();
            return -1;
        }
        if (start_session(c) != 0) return -1;
        c->ready = 1;
    }
    uint8_t buffer[16384];
    for (;;) {
        int n = SSL_read(c->ssl, buffer, sizeof buffer);
        if (n <= 0) {
            int error = SSL_get_error(c->ssl, n);
            if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) break;
            ERR_clear_error();
            return -1;
        }
        if (nghttp2_session_mem_recv(c->session, buffer, (size_t)n) < 0) return -1;
        if (c->closing) return -1;
        if (flush(c) != 0) return -1;
    }
    if (c->closing) return -1;
    return flush(c);
}

static void accept_connections(struct pigeon_h2s_server *server) {
    for (;;) {
        int fd = accept4(server->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        if (server->connection_count >= MAX_CONNECTIONS) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        connection *c = calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->server = server;
        c->id = atomic_fetch_add(&server->accepted, 1) + 1;
        c->ssl = SSL_new(server->tls);
        SSL_set_fd(c->ssl, fd);
        SSL_set_accept_state(c->ssl);
        server->connections[server->connection_count++] = c;
    }
}

static void *run(void *argument) {
    struct pigeon_h2s_server *server = argument;
    struct pollfd fds[MAX_CONNECTIONS + 2];
    for (;;) {
        fds[0] = (struct pollfd){server->listener, POLLIN, 0};
        fds[1] = (struct pollfd){server->wake[0], POLLIN, 0};
        for (size_t i = 0; i < server->connection_count; i++) {
            connection *c = server->connections[i];
            short events = POLLIN;
            if (c->out_length > 0) events |= POLLOUT;
            fds[i + 2] = (struct pollfd){c->fd, events, 0};
        }
        int wait_ms = 1000;
        uint64_t now = now_ms();
        for (size_t i = 0; i < server->connection_count; i++) {
            for (deferred *d = server->connections[i]->deferred; d != NULL; d = d->next) {
                int until = d->due_ms <= now ? 0 : (int)(d->due_ms - now);
                if (until < wait_ms) wait_ms = until;
            }
        }
        int ready = poll(fds, server->connection_count + 2, wait_ms);
        if (ready < 0 && errno != EINTR) break;
        if (fds[1].revents & POLLIN) break;
        size_t count = server->connection_count;
        now = now_ms();
        for (size_t i = 0; i < count; i++) {
            connection *c = server->connections[i];
            if (c->deferred != NULL && c->ready) {
                send_due(c, now);
                if (flush(c) != 0) c->closing = 1;
            }
            if (fds[i + 2].revents == 0) continue;
            if ((fds[i + 2].revents & (POLLERR | POLLHUP | POLLNVAL)) && !(fds[i + 2].revents & POLLIN)) {
                c->closing = 1;
            } else if (service(c) != 0) {
                c->closing = 1;
            }
        }
        size_t kept = 0;
        for (size_t i = 0; i < server->connection_count; i++) {
            connection *c = server->connections[i];
            if (c->closing) {
                connection_close(c, 1);
            } else {
                server->connections[kept++] = c;
            }
        }
        server->connection_count = kept;
        if (fds[0].revents & POLLIN) accept_connections(server);
    }
    for (size_t i = 0; i < server->connection_count; i++) connection_close(server->connections[i], 0);
    server->connection_count = 0;
    return NULL;
}

pigeon_h2s_server *pigeon_h2s_start(const pigeon_h2s_config *config, char *error, size_t capacity) {
    struct pigeon_h2s_server *server = calloc(1, sizeof *server);
    if (server == NULL) {
        snprintf(error, capacity, "out of memory");
        return NULL;
    }
    server->handler = config->handler;
    server->context = config->context;
    server->enforce_reset_limit = config->enforce_reset_limit;
    server->listener = -1;
    server->wake[0] = server->wake[1] = -1;

    server->tls = SSL_CTX_new(TLS_server_method());
    if (server->tls == NULL ||
        SSL_CTX_use_certificate_chain_file(server->tls, config->certificate_file) != 1 ||
        SSL_CTX_use_PrivateKey_file(server->tls, config->key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(error, capacity, "cannot load the TLS certificate or key (%s)",
                 ERR_reason_error_string(ERR_get_error()));
        goto fail;
    }
    SSL_CTX_set_min_proto_version(server->tls, TLS1_2_VERSION);
    SSL_CTX_set_alpn_select_cb(server->tls, select_alpn, NULL);
    if (config->client_ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(server->tls, config->client_ca_file, NULL) != 1) {
            snprintf(error, capacity, "cannot load the client CA file");
            goto fail;
        }
        SSL_CTX_set_verify(server->tls, SSL_VERIFY_PEER, accept_any);
    }

    server->listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(server->listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_port = htons(config->port);
    if (inet_pton(AF_INET, config->address, &address.sin_addr) != 1) {
        snprintf(error, capacity, "'%s' is not an IPv4 address", config->address);
        goto fail;
    }
    if (bind(server->listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(server->listener, 512) != 0) {
        snprintf(error, capacity, "cannot listen on %s:%u: %s", config->address,
                 (unsigned)config->port, strerror(errno));
        goto fail;
    }
    socklen_t length = sizeof address;
    getsockname(server->listener, (struct sockaddr *)&address, &length);
    server->port = ntohs(address.sin_port);
    if (pipe2(server->wake, O_CLOEXEC) != 0 || pthread_create(&server->thread, NULL, run, server) != 0) {
        snprintf(error, capacity, "cannot start the server thread");
        goto fail;
    }
    return server;
fail:
    if (server->listener >= 0) close(server->listener);
    if (server->wake[0] >= 0) close(server->wake[0]);
    if (server->wake[1] >= 0) close(server->wake[1]);
    if (server->tls) SSL_CTX_free(server->tls);
    free(server);
    return NULL;
}

uint16_t pigeon_h2s_port(const pigeon_h2s_server *server) { return server->port; }

uint64_t pigeon_h2s_connections(const pigeon_h2s_server *server) {
    return atomic_load(&((struct pigeon_h2s_server *)server)->accepted);
}

void pigeon_h2s_stop(pigeon_h2s_server *server) {
    ssize_t ignored = write(server->wake[1], "x", 1);
    (void)ignored;
    pthread_join(server->thread, NULL);
    close(server->listener);
    close(server->wake[0]);
    close(server->wake[1]);
    SSL_CTX_free(server->tls);
    free(server);
}
