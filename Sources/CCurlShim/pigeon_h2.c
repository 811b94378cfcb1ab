#define _GNU_SOURCE
#include "pigeon_h2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>
#include <pthread.h>

#define MAX_RESPONSE_BYTES (1 << 20)
#define MAX_HEADERS 32

struct pigeon_h2_client {
    CURLM *multi;
    long connections_opened;
};

struct pigeon_h2_transfer {
    CURL *easy;
    struct curl_slist *headers;
    uint8_t *body;
    size_t body_length;
    size_t body_capacity;
    char *response_headers[MAX_HEADERS];
    int response_header_count;
    char error[CURL_ERROR_SIZE];
    int result;
    void *context;
    pigeon_h2_client *client;
};

static size_t on_body(char *data, size_t size, size_t count, void *user) {
    struct pigeon_h2_transfer *transfer = user;
    size_t length = size * count;
    if (transfer->body_length + length > MAX_RESPONSE_BYTES) return 0; /* aborts: too large */
    if (transfer->body_length + length > transfer->body_capacity) {
        size_t capacity = transfer->body_capacity ? transfer->body_capacity * 2 : 1024;
        while (capacity < transfer->body_length + length) capacity *= 2;
        uint8_t *grown = realloc(transfer->body, capacity);
        if (grown == NULL) return 0;
        transfer->body = grown;
        transfer->body_capacity = capacity;
    }
    memcpy(transfer->body + transfer->body_length, data, length);
    transfer->body_length += length;
    return length;
}

static size_t on_header(char *data, size_t size, size_t count, void *user) {
    struct pigeon_h2_transfer *transfer = user;
    size_t length = size * count;
    if (transfer->response_header_count >= MAX_HEADERS) return length;
    while (length > 0 && (data[length - 1] == '\n' || data[length - 1] == '\r')) length--;
    if (length == 0 || memchr(data, ':', length) == NULL) return size * count;
    char *copy = malloc(length + 1);
    if (copy == NULL) return 0;
    memcpy(copy, data, length);
    copy[length] = '\0';
    transfer->response_headers[transfer->response_header_count++] = copy;
    return size * count;
}

static curl_socket_t on_open_socket(void *user, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    pigeon_h2_client *client = user;
    client->connections_opened++;
    return socket(address->family, address->socktype, address->protocol);
}

pigeon_h2_client *pigeon_h2_client_new(long max_connections, long max_streams) {
    static int initialized = 0;
    if (!initialized) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        initialized = 1;
    }
    pigeon_h2_client *client = calloc(1, sizeof *client);
    if (client == NULL) return NULL;
    client->multi = curl_multi_init();
    if (client->multi == NULL) {
        free(client);
        return NULL;
    }
    curl_multi_setopt(client->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(client->multi, CURLMOPT_MAX_HOST_CONNECTIONS, max_connections);
    curl_multi_setopt(client->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max_streams);
    return client;
}

void pigeon_h2_client_free(pigeon_h2_client *client) {
    curl_multi_cleanup(client->multi);
    free(client);
}

int pigeon_h2_client_add(pigeon_h2_client *client, pigeon_h2_transfer *transfer) {
    transfer->client = client;
    curl_easy_setopt(transfer->easy, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(transfer->easy, CURLOPT_OPENSOCKETDATA, client);
    return (int)curl_multi_add_handle(client->multi, transfer->easy);
}

int pigeon_h2_client_run(pigeon_h2_client *client, int timeout_ms) {
    int running = 0;
    CURLMcode code = curl_multi_perform(client->multi, &running);
    if (code != CURLM_OK) return (int)code;
    code = curl_multi_poll(client->multi, NULL, 0, timeout_ms, NULL);
    if (code != CURLM_OK) return (int)code;
    return (int)curl_multi_perform(client->multi, &running);
}

pigeon_h2_transfer *pigeon_h2_client_next_done(pigeon_h2_client *client) {
    int remaining = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(client->multi, &remaining)) != NULL) {
        if (message->msg != CURLMSG_DONE) continue;
        pigeon_h2_transfer *transfer = NULL;
        curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&transfer);
        transfer->result = (int)message->data.result;
        curl_multi_remove_handle(client->multi, message->easy_handle);
        return transfer;
    }
    return NULL;
}

void pigeon_h2_client_wakeup(pigeon_h2_client *client) { curl_multi_wakeup(client->multi); }

void pigeon_h2_client_abandon(pigeon_h2_client *client, pigeon_h2_transfer *transfer) {
    curl_multi_remove_handle(client->multi, transfer->easy);
    transfer->result = (int)CURLE_ABORTED_BY_CALLBACK;
    snprintf(transfer->error, sizeof transfer->error, "abandoned: the client shut down");
}

long pigeon_h2_client_connections_opened(pigeon_h2_client *client) {
    return client->connections_opened;
}

pigeon_h2_transfer *pigeon_h2_transfer_new(const char *method, const char *url, const char *const *headers,
                                           size_t header_count, const uint8_t *body,
                                           size_t body_length, const pigeon_h2_tls *tls,
                                           long timeout_ms, int fresh_connection, void *context, char *error,
                                           size_t error_capacity) {
    pigeon_h2_transfer *transfer = calloc(1, sizeof *transfer);
    if (transfer == NULL) {
        snprintf(error, error_capacity, "out of memory");
        return NULL;
    }
    transfer->easy = curl_easy_init();
    if (transfer->easy == NULL) {
        free(transfer);
        snprintf(error, error_capacity, "curl_easy_init failed");
        return NULL;
    }
    transfer->context = context;
    for (size_t index = 0; index < header_count; index++) {
        struct curl_slist *grown = curl_slist_append(transfer->headers, headers[index]);
        if (grown == NULL) {
            pigeon_h2_transfer_free(transfer);
            snprintf(error, error_capacity, "out of memory for headers");
            return NULL;
        }
        transfer->headers = grown;
    }
    /* Without this libcurl adds "Expect: 100-continue" to larger bodies. */
    transfer->headers = curl_slist_append(transfer->headers, "Expect:");

    CURL *easy = transfer->easy;
    CURLcode code = CURLE_OK;
#define SET(option, value) if (code == CURLE_OK) code = curl_easy_setopt(easy, option, value)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PRIVATE, transfer);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    SET(CURLOPT_PIPEWAIT, 1L);
    if (method != NULL && strcmp(method, "GET") == 0) {
        SET(CURLOPT_HTTPGET, 1L);
    } else {
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_length);
        SET(CURLOPT_COPYPOSTFIELDS, (const char *)body);
        /* DELETE, PUT: a body sent like a POST's under another method. */
        if (method != NULL && strcmp(method, "POST") != 0) SET(CURLOPT_CUSTOMREQUEST, method);
    }
    SET(CURLOPT_HTTPHEADER, transfer->headers);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, transfer);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, transfer);
    SET(CURLOPT_ERRORBUFFER, transfer->error);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_TIMEOUT_MS, timeout_ms);
    SET(CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
    SET(CURLOPT_PROTOCOLS_STR, "https,http");
    if (tls != NULL) {
        if (tls->ca_file != NULL) SET(CURLOPT_CAINFO, tls->ca_file);
        if (tls->client_cert != NULL) {
            SET(CURLOPT_SSLCERT, tls->client_cert);
            SET(CURLOPT_SSLCERTTYPE, tls->client_cert_type ? tls->client_cert_type : "P12");
            if (tls->client_key != NULL) SET(CURLOPT_SSLKEY, tls->client_key);
            if (tls->client_key_password != NULL) SET(CURLOPT_KEYPASSWD, tls->client_key_password);
        }
    }
    SET(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (fresh_connection) {
        /* A request that must not be sent twice: libcurl re-sends a request whose reused
         * connection turns out dead, so this one gets a connection of its own. */
        SET(CURLOPT_FRESH_CONNECT, 1L);
        SET(CURLOPT_FORBID_REUSE, 1L);
    }
#undef SET
    if (code != CURLE_OK) {
        snprintf(error, error_capacity, "curl option refused: %s", curl_easy_strerror(code));
        pigeon_h2_transfer_free(transfer);
        return NULL;
    }
    return transfer;
}

void pigeon_h2_transfer_free(pigeon_h2_transfer *transfer) {
    if (transfer == NULL) return;
    if (transfer->easy) curl_easy_cleanup(transfer->easy);
    curl_slist_free_all(transfer->headers);
    for (int index = 0; index < transfer->response_header_count; index++) {
        free(transfer->response_headers[index]);
    }
    free(transfer->body);
    free(transfer);
}

void *pigeon_h2_transfer_context(const pigeon_h2_transfer *transfer) { return transfer->context; }
int pigeon_h2_transfer_result(const pigeon_h2_transfer *transfer) { return transfer->result; }

const char *pigeon_h2_transfer_error(const pigeon_h2_transfer *transfer) {
    if (transfer->error[0] != '\0') return transfer->error;
    return curl_easy_strerror((CURLcode)transfer->result);
}

long pigeon_h2_transfer_status(const pigeon_h2_transfer *transfer) {
    long status = 0;
    curl_easy_getinfo(transfer->easy, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

int pigeon_h2_transfer_http_version(const pigeon_h2_transfer *transfer) {
    long version = 0;
    curl_easy_getinfo(transfer->easy, CURLINFO_HTTP_VERSION, &version);
    if (version == CURL_HTTP_VERSION_2_0) return 2;
    if (version == CURL_HTTP_VERSION_1_1 || version == CURL_HTTP_VERSION_1_0) return 1;
    return 0;
}

const uint8_t *pigeon_h2_transfer_body(const pigeon_h2_transfer *transfer, size_t *length) {
    *length = transfer->body_length;
    return transfer->body;
}

const char *pigeon_h2_transfer_header(const pigeon_h2_transfer *transfer, const char *name) {
    size_t name_length = strlen(name);
    for (int index = 0; index < transfer->response_header_count; index++) {
        const char *line = transfer->response_headers[index];
        if (strncasecmp(line, name, name_length) == 0 && line[name_length] == ':') {
            const char *value = line + name_length + 1;
            while (*value == ' ' || *value == '\t') value++;
            return value;
        }
    }
    return NULL;
}

void pigeon_h2_name_current_thread(const char *name) {
    char truncated[16];
    snprintf(truncated, sizeof truncated, "%s", name);
    pthread_setname_np(pthread_self(), truncated);
}
