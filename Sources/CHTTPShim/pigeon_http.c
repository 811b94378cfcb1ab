#include "pigeon_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#include <microhttpd.h>

struct pigeon_http_server {
    struct MHD_Daemon *daemon;
    pigeon_http_handler handler;
    pigeon_http_logger logger;
    void *context;
    size_t max_body_bytes;
};

struct pigeon_http_exchange {
    struct MHD_Connection *connection;
    const char *method;
    const char *path;
    char *query;
    size_t query_length;
    uint8_t *body;
    size_t body_length;
    size_t body_capacity;
    int too_large;
    int queued;
    unsigned int status;
    struct MHD_Response *response;
    char peer[64];
};

static void log_trampoline(void *cls, const char *format, va_list arguments) {
    struct pigeon_http_server *server = cls;
    if (server == NULL || server->logger == NULL) return;
    char message[512];
    vsnprintf(message, sizeof message, format, arguments);
    size_t length = strlen(message);
    while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == '\r')) {
        message[--length] = '\0';
    }
    server->logger(server->context, message);
}

static enum MHD_Result append_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
    (void)kind;
    struct pigeon_http_exchange *exchange = cls;
    size_t key_length = strlen(key);
    size_t value_length = value ? strlen(value) : 0;
    size_t needed = exchange->query_length + key_length + value_length + 3;
    char *grown = realloc(exchange->query, needed);
    if (grown == NULL) return MHD_NO;
    exchange->query = grown;
    char *cursor = grown + exchange->query_length;
    if (exchange->query_length > 0) *cursor++ = '&';
    memcpy(cursor, key, key_length);
    cursor += key_length;
    if (value != NULL) {
        *cursor++ = '=';
        memcpy(cursor, value, value_length);
        cursor += value_length;
    }
    *cursor = '\0';
    exchange->query_length = (size_t)(cursor - grown);
    return MHD_YES;
}

static void describe_peer(struct pigeon_http_exchange *exchange) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(exchange->connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    exchange->peer[0] = '\0';
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, exchange->peer,
                  sizeof exchange->peer);
    } else if (address->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, exchange->peer,
                  sizeof exchange->peer);
    }
}

static enum MHD_Result dispatch(struct pigeon_http_server *server,
                                struct pigeon_http_exchange *exchange) {
    exchange->queued = 1;
    server->handler(server->context, exchange);
    if (exchange->response == NULL) {
        static const char fallback[] = "internal error: no response produced\n";
        exchange->status = 500;
        exchange->response = MHD_create_response_from_buffer(
            sizeof fallback - 1, (void *)fallback, MHD_RESPMEM_PERSISTENT);
        if (exchange->response == NULL) return MHD_NO;
    }
    if (exchange->too_large) {
        MHD_add_response_header(exchange->response, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    enum MHD_Result result =
        MHD_queue_response(exchange->connection, exchange->status, exchange->response);
    MHD_destroy_response(exchange->response);
    exchange->response = NULL;
    return result;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *connection,
                                      const char *url, const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **request_state) {
    (void)version;
    struct pigeon_http_server *server = cls;
    struct pigeon_http_exchange *exchange = *request_state;

    if (exchange == NULL) {
        exchange = calloc(1, sizeof *exchange);
        if (exchange == NULL) return MHD_NO;
        exchange->connection = connection;
        exchange->method = method;
        exchange->path = url;
        *request_state = exchange;
        describe_peer(exchange);
        MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, append_query, exchange);

        const char *declared =
            MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (declared != NULL) {
            char *end = NULL;
            unsigned long long length = strtoull(declared, &end, 10);
            if (end != declared && length > server->max_body_bytes) {
                exchange->too_large = 1;
                return dispatch(server, exchange);
            }
        }
        return MHD_YES;
    }

    if (*upload_data_size != 0) {
        size_t chunk = *upload_data_size;
        *upload_data_size = 0;
        if (exchange->queued || exchange->too_large) return MHD_YES;
        if (exchange->body_length + chunk > server->max_body_bytes) {
            exchange->too_large = 1;
            free(exchange->body);
            exchange->body = NULL;
            exchange->body_length = 0;
            exchange->body_capacity = 0;
            return MHD_YES;
        }
        if (exchange->body_length + chunk > exchange->body_capacity) {
            size_t capacity = exchange->body_capacity ? exchange->body_capacity : 4096;
            while (capacity < exchange->body_length + chunk) capacity *= 2;
            if (capacity > server->max_body_bytes) capacity = server->max_body_bytes;
            uint8_t *grown = realloc(exchange->body, capacity);
            if (grown == NULL) return MHD_NO;
            exchange->body = grown;
            exchange->body_capacity = capacity;
        }
        memcpy(exchange->body + exchange->body_length, upload_data, chunk);
        exchange->body_length += chunk;
        return MHD_YES;
    }

    if (exchange->queued) return MHD_YES;
    return dispatch(server, exchange);
}

static void request_completed(void *cls, struct MHD_Connection *connection, void **request_state,
                              enum MHD_RequestTerminationCode code) {
    (void)cls;
    (void)connection;
    (void)code;
    struct pigeon_http_exchange *exchange = *request_state;
    if (exchange == NULL) return;
    if (exchange->response != NULL) MHD_destroy_response(exchange->response);
    free(exchange->body);
    free(exchange->query);
    free(exchange);
    *request_state = NULL;
}

int pigeon_http_start(const pigeon_http_config *config, pigeon_http_server **out, char *error,
                      size_t error_capacity) {
    *out = NULL;
    struct sockaddr_in address4;
    struct sockaddr_in6 address6;
    const struct sockaddr *address = NULL;
    unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                         MHD_USE_AUTO | MHD_USE_ITC | MHD_USE_ERROR_LOG;

    memset(&address4, 0, sizeof address4);
    memset(&address6, 0, sizeof address6);
    if (inet_pton(AF_INET, config->address, &address4.sin_addr) == 1) {
        address4.sin_family = AF_INET;
        address4.sin_port = htons(config->port);
        address = (const struct sockaddr *)&address4;
    } else if (inet_pton(AF_INET6, config->address, &address6.sin6_addr) == 1) {
        address6.sin6_family = AF_INET6;
        address6.sin6_port = htons(config->port);
        address = (const struct sockaddr *)&address6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(error, error_capacity, "'%s' is not an IPv4 or IPv6 address", config->address);
        return -1;
    }
    if (config->tls_certificate_pem != NULL) flags |= MHD_USE_TLS;

    struct pigeon_http_server *server = calloc(1, sizeof *server);
    if (server == NULL) {
        snprintf(error, error_capacity, "out of memory");
        return -1;
    }
    server->handler = config->handler;
    server->logger = config->logger;
    server->context = config->context;
    server->max_body_bytes = config->max_body_bytes;

    struct MHD_OptionItem options[12];
    int count = 0;
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER,
                                               (intptr_t)log_trampoline, server};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)address};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                               (intptr_t)config->connection_limit, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                               (intptr_t)config->idle_timeout_seconds, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED,
                                               (intptr_t)request_completed, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, NULL};
    if (config->tls_certificate_pem != NULL) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
                                                   (void *)config->tls_certificate_pem};
        options[count++] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)config->tls_key_pem};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    server->daemon = MHD_start_daemon(flags, 0, NULL, NULL, access_handler, server,
                                      MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (server->daemon == NULL) {
        snprintf(error, error_capacity,
                 "cannot listen on %s port %u (address in use, bad TLS material or no permission)",
                 config->address, (unsigned)config->port);
        free(server);
        return -1;
    }
    *out = server;
    return 0;
}

uint16_t pigeon_http_bound_port(const pigeon_http_server *server) {
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

void pigeon_http_quiesce(pigeon_http_server *server) {
    MHD_socket socket = MHD_quiesce_daemon(server->daemon);
    if (socket != MHD_INVALID_SOCKET) close(socket);
}

void pigeon_http_stop(pigeon_http_server *server) {
    MHD_stop_daemon(server->daemon);
    free(server);
}

const char *pigeon_http_method(const pigeon_http_exchange *exchange) { return exchange->method; }
const char *pigeon_http_path(const pigeon_http_exchange *exchange) { return exchange->path; }
const char *pigeon_http_query(const pigeon_http_exchange *exchange) {
    return exchange->query ? exchange->query : "";
}
const char *pigeon_http_header(const pigeon_http_exchange *exchange, const char *name) {
    return MHD_lookup_connection_value(exchange->connection, MHD_HEADER_KIND, name);
}
const uint8_t *pigeon_http_body(const pigeon_http_exchange *exchange, size_t *length) {
    *length = exchange->body_length;
    return exchange->body;
}
int pigeon_http_body_too_large(const pigeon_http_exchange *exchange) { return exchange->too_large; }
const char *pigeon_http_peer(const pigeon_http_exchange *exchange) { return exchange->peer; }

int pigeon_http_respond(pigeon_http_exchange *exchange, unsigned int status, const uint8_t *body,
                        size_t length) {
    if (exchange->response != NULL) MHD_destroy_response(exchange->response);
    exchange->response =
        MHD_create_response_from_buffer(length, (void *)body, MHD_RESPMEM_MUST_COPY);
    exchange->status = status;
    return exchange->response ? 0 : -1;
}

int pigeon_http_add_header(pigeon_http_exchange *exchange, const char *name, const char *value) {
    if (exchange->response == NULL) return -1;
    return MHD_add_response_header(exchange->response, name, value) == MHD_YES ? 0 : -1;
}
