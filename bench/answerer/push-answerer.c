/*
 * push-answerer: the fastest push service we can build, as a ceiling for benchmarks.
 *
 * HTTP/2 over TLS (nghttp2 + OpenSSL), one thread per connection, no validation: it reads each
 * request to its end and answers at once, the way APNs and FCM answer a valid push.
 *   POST /3/device/<token>           200, an apns-id header, no body (APNs)
 *   POST /3/device/dead<rest>        410 Unregistered with a timestamp (a dead token; noted as a code too)
 *   POST /v1/projects/<p>/messages:send  200, {"name": "projects/<p>/messages/<n>"} (FCM HTTP v1)
 *   POST /token                      200, an OAuth access token for an hour (FCM's token endpoint)
 *   POST /rustore/v1/projects/<p>/messages:send  200, {} (RuStore)
 *   POST /hms/oauth2/v3/token        200, an access token for an hour (Huawei's OAuth endpoint)
 *   POST /hms/v1/<app>/messages:send 200, {"code": "80000000", …} (Huawei Push Kit)
 *   POST /webpush/<subscription>     201 (a Web Push service; the body is not decrypted)
 *   GET  /count                      200, {"apns": n, "fcm": n, "rustore": n, "huawei": n, "webpush": n}
 *   GET  /codes                      200, one line per APNs push whose token starts with "c0de"
 *                                    (the one-time codes of bench/codes.sh): "<token> <arrival, µs
 *                                    since the epoch>", the first 20,000 of them
 * Anything else: 404.
 *
 * usage: push-answerer PORT CERT.pem KEY.pem     (listens on 127.0.0.1 only; stops on SIGTERM)
 * build: cc -O2 -o push-answerer push-answerer.c -lnghttp2 -lssl -lcrypto -lpthread
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum kind { UNKNOWN, APNS, APNS_DEAD, FCM, TOKEN, COUNT, RUSTORE, HUAWEI, HUAWEI_TOKEN, WEBPUSH, CODES };

static SSL_CTX *context;
static atomic_long apns_answered, fcm_answered, rustore_answered, huawei_answered, webpush_answered;

/* Arrivals of one-time codes: token and time, for bench/codes.sh's push latency. */
#define MAX_CODES 200000
static struct { char token[72]; long long micros; } codes[MAX_CODES];
static int code_count;
static pthread_mutex_t codes_lock = PTHREAD_MUTEX_INITIALIZER;

static long long now_micros(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

/* One request: what it asked for, and the body of our answer while it is being sent (the
   inline buffer, or `dynamic` for /codes). */
struct stream {
    enum kind kind;
    char body[160];
    char *dynamic;
    size_t length, sent;
};

struct connection {
    SSL *ssl;
    nghttp2_session *session;
    unsigned char out[65536];
    size_t out_length;
};

static int starts_with(const uint8_t *value, size_t length, const char *prefix) {
    size_t n = strlen(prefix);
    return length >= n && memcmp(value, prefix, n) == 0;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    (void)user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    struct stream *stream = calloc(1, sizeof *stream);
    if (!stream) return NGHTTP2_ERR_CALLBACK_FAILURE;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, stream);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t name_length,
                     const uint8_t *value, size_t value_length, uint8_t flags, void *user) {
    (void)flags; (void)user;
    struct stream *stream = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!stream || name_length != 5 || memcmp(name, ":path", 5) != 0) return 0;
    if (starts_with(value, value_length, "/3/device/c0de") || starts_with(value, value_length, "/3/device/dead")) {
        stream->kind = APNS;
        long long micros = now_micros();
        size_t length = value_length - 10 < 71 ? value_length - 10 : 71;
        pthread_mutex_lock(&codes_lock);
        if (code_count < MAX_CODES) {
            memcpy(codes[code_count].token, value + 10, length);
            codes[code_count].token[length] = '\0';
            codes[code_count].micros = micros;
            code_count++;
        }
        pthread_mutex_unlock(&codes_lock);
        if (starts_with(value, value_length, "/3/device/dead")) stream->kind = APNS_DEAD;
    }
    else if (starts_with(value, value_length, "/3/device/")) stream->kind = APNS;
    else if (starts_with(value, value_length, "/v1/projects/")) stream->kind = FCM;
    else if (starts_with(value, value_length, "/token")) stream->kind = TOKEN;
    else if (starts_with(value, value_length, "/rustore/v1/projects/")) stream->kind = RUSTORE;
    else if (starts_with(value, value_length, "/hms/oauth2/")) stream->kind = HUAWEI_TOKEN;
    else if (starts_with(value, value_length, "/hms/v1/")) stream->kind = HUAWEI;
    else if (starts_with(value, value_length, "/webpush/")) stream->kind = WEBPUSH;
    else if (starts_with(value, value_length, "/count")) stream->kind = COUNT;
    else if (starts_with(value, value_length, "/codes")) stream->kind = CODES;
    return 0;
}

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buffer, size_t length,
                         uint32_t *flags, nghttp2_data_source *source, void *user) {
    (void)session; (void)stream_id; (void)user;
    struct stream *stream = source->ptr;
    size_t n = stream->length - stream->sent;
    if (n > length) n = length;
    memcpy(buffer, (stream->dynamic ? stream->dynamic : stream->body) + stream->sent, n);
    stream->sent += n;
    if (stream->sent == stream->length) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

#define HEADER(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }

static int answer(nghttp2_session *session, int32_t stream_id, struct stream *stream) {
    char apns_id[40];
    nghttp2_data_provider provider = { .source.ptr = stream, .read_callback = read_body };
    switch (stream->kind) {
    case APNS: {
        long n = atomic_fetch_add(&apns_answered, 1) + 1;
        snprintf(apns_id, sizeof apns_id, "00000000-0000-4000-8000-%012ld", n);
        nghttp2_nv headers[] = { HEADER(":status", "200"), HEADER("apns-id", apns_id) };
        return nghttp2_submit_response(session, stream_id, headers, 2, NULL);
    }
    case APNS_DEAD: {
        long n = atomic_fetch_add(&apns_answered, 1) + 1;
        snprintf(apns_id, sizeof apns_id, "00000000-0000-4000-8000-%012ld", n);
        stream->length = (size_t)snprintf(stream->body, sizeof stream->body, "{\"reason\":\"Unregistered\",\"timestamp\":%lld}",
                                          now_micros() / 1000);
        nghttp2_nv headers[] = { HEADER(":status", "410"), HEADER("apns-id", apns_id), HEADER("content-type", "application/json") };
        return nghttp2_submit_response(session, stream_id, headers, 3, &provider);
    }
    case FCM: {
        long n = atomic_fetch_add(&fcm_answered, 1) + 1;
        stream->length = (size_t)snprintf(stream->body, sizeof stream->body, "{\"name\":\"projects/bench/messages/%ld\"}", n);
        break;
    }
    case RUSTORE:
        atomic_fetch_add(&rustore_answered, 1);
        stream->length = (size_t)snprintf(stream->body, sizeof stream->body, "{}");
        break;
    case HUAWEI:
        atomic_fetch_add(&huawei_answered, 1);
        stream->length = (size_t)snprintf(stream->body, sizeof stream->body, "{\"code\":\"80000000\",\"msg\":\"Success\",\"requestId\":\"bench\"}");
        break;
    case WEBPUSH: {
        atomic_fetch_add(&webpush_answered, 1);
        nghttp2_nv headers[] = { HEADER(":status", "201") };
        return nghttp2_submit_response(session, stream_id, headers, 1, NULL);
    }
    case HUAWEI_TOKEN:
    case TOKEN:
        stream->length = (size_t)snprintf(stream->body, sizeof stream->body,
                                          "{\"access_token\":\"bench-token\",\"expires_in\":3600,\"token_type\":\"Bearer\"}");
        break;
    case COUNT:
        stream->length = (size_t)snprintf(stream->body, sizeof stream->body,
                                          "{\"apns\":%ld,\"fcm\":%ld,\"rustore\":%ld,\"huawei\":%ld,\"webpush\":%ld}",
                                          atomic_load(&apns_answered), atomic_load(&fcm_answered), atomic_load(&rustore_answered),
                                          atomic_load(&huawei_answered), atomic_load(&webpush_answered));
        break;
    case CODES: {
        pthread_mutex_lock(&codes_lock);
        stream->dynamic = malloc((size_t)code_count * 96 + 1);
        size_t length = 0;
        for (int index = 0; stream->dynamic && index < code_count; index++)
            length += (size_t)sprintf(stream->dynamic + length, "%s %lld\n", codes[index].token, codes[index].micros);
        pthread_mutex_unlock(&codes_lock);
        if (!stream->dynamic) return NGHTTP2_ERR_CALLBACK_FAILURE;
        stream->length = length;
        nghttp2_nv headers[] = { HEADER(":status", "200"), HEADER("content-type", "text/plain") };
        return nghttp2_submit_response(session, stream_id, headers, 2, &provider);
    }
    default: {
        nghttp2_nv headers[] = { HEADER(":status", "404") };
        return nghttp2_submit_response(session, stream_id, headers, 1, NULL);
    }
    }
    nghttp2_nv headers[] = { HEADER(":status", "200"), HEADER("content-type", "application/json") };
    return nghttp2_submit_response(session, stream_id, headers, 2, &provider);
}

static int on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    (void)user;
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    struct stream *stream = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    return stream ? (answer(session, frame->hd.stream_id, stream) == 0 ? 0 : NGHTTP2_ERR_CALLBACK_FAILURE) : 0;
}

static int on_close(nghttp2_session *session, int32_t stream_id, uint32_t error, void *user) {
    (void)error; (void)user;
    struct stream *stream = nghttp2_session_get_stream_user_data(session, stream_id);
    if (stream) free(stream->dynamic);
    free(stream);
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    return 0;
}

/* Writes what nghttp2 has to send, gathered into large TLS records. */
static int flush(struct connection *connection) {
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(connection->session, &data);
        if (n < 0) return -1;
        if (n == 0 || connection->out_length + (size_t)n > sizeof connection->out) {
            if (connection->out_length > 0 && SSL_write(connection->ssl, connection->out, (int)connection->out_length) <= 0) return -1;
            connection->out_length = 0;
        }
        if (n == 0) return 0;
        if ((size_t)n > sizeof connection->out) {
            if (SSL_write(connection->ssl, data, (int)n) <= 0) return -1;
        } else {
            memcpy(connection->out + connection->out_length, data, (size_t)n);
            connection->out_length += (size_t)n;
        }
    }
}

static void *serve(void *argument) {
    int socket = (int)(intptr_t)argument;
    int one = 1;
    setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct connection *connection = calloc(1, sizeof *connection);
    nghttp2_session_callbacks *callbacks;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
    connection->ssl = SSL_new(context);
    SSL_set_fd(connection->ssl, socket);
    /* libcurl resets the stream of every answer without a body (APNs' success); Debian's nghttp2
       ends a connection after a burst of resets, which APNs does not do. */
    nghttp2_option *option;
    nghttp2_option_new(&option);
    nghttp2_option_set_stream_reset_rate_limit(option, UINT64_C(1) << 40, UINT64_C(1) << 40);
    if (SSL_accept(connection->ssl) == 1 && nghttp2_session_server_new2(&connection->session, callbacks, connection, option) == 0) {
        nghttp2_settings_entry settings[] = {
            { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000 },
            { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20 },
        };
        nghttp2_submit_settings(connection->session, NGHTTP2_FLAG_NONE, settings, 2);
        nghttp2_session_set_local_window_size(connection->session, NGHTTP2_FLAG_NONE, 0, 1 << 24);
        unsigned char buffer[65536];
        while (flush(connection) == 0 && nghttp2_session_want_read(connection->session)) {
            int n = SSL_read(connection->ssl, buffer, sizeof buffer);
            if (n <= 0 || nghttp2_session_mem_recv(connection->session, buffer, (size_t)n) < 0) break;
        }
        nghttp2_session_del(connection->session);
    }
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    SSL_free(connection->ssl);
    close(socket);
    free(connection);
    return NULL;
}

static int select_h2(SSL *ssl, const unsigned char **out, unsigned char *out_length, const unsigned char *in,
                     unsigned int in_length, void *argument) {
    (void)ssl; (void)argument;
    return nghttp2_select_next_protocol((unsigned char **)out, out_length, in, in_length) == 1
        ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_NOACK;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT CERT.pem KEY.pem\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    context = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(context, argv[2]) != 1 ||
        SSL_CTX_use_PrivateKey_file(context, argv[3], SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    SSL_CTX_set_alpn_select_cb(context, select_h2, NULL);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])) };
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 128) != 0) {
        perror("push-answerer: bind");
        return 1;
    }
    printf("push-answerer: listening on https://127.0.0.1:%s\n", argv[1]);
    fflush(stdout);
    for (;;) {
        int socket = accept(listener, NULL, NULL);
        if (socket < 0) continue;
        pthread_t thread;
        if (pthread_create(&thread, NULL, serve, (void *)(intptr_t)socket) == 0) pthread_detach(thread);
        else close(socket);
    }
}
