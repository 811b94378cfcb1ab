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
/* Finished transfers a client keeps for its next requests: reusing an easy handle costs far
 * less than making a new one and cleaning it up (its buffers stay), and a fan-out starts one
 * transfer a push. At most this many a client. Each holds about 90 KB (libcurl 7.88 keeps a
 * handle's 16 KB receive and 64 KB upload buffers): a client keeps no more than it had in
 * flight at its peak, buffers those requests held anyway, and frees them once quiet. */
#define MAX_IDLE_TRANSFERS 256
/* A kept transfer's response buffer above this size is freed rather than kept. */
#define MAX_KEPT_BODY_CAPACITY (16 * 1024)

struct pigeon_h2_client {
    CURLM *multi;
    long connections_opened;
    pigeon_h2_transfer *idle;
    int idle_count;
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
    /* The next transfer in its client's list of idle ones. */
    pigeon_h2_transfer *next_idle;
    /* What its easy handle was last set up for: a reused transfer whose next request has the
     * same method, connection rule, timeout and TLS keeps those options and sets only its URL,
     * body and headers (libcurl keeps an easy handle's options from one transfer to the next). */
    int configured;
    /* Whether its easy handle was ever set up (a new one has libcurl's defaults). */
    int used;
    char configured_method[16];
    int configured_fresh;
    long configured_timeout_ms;
    pigeon_h2_tls configured_tls;
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
    pigeon_h2_client_trim(client);
    curl_multi_cleanup(client->multi);
    free(client);
}

/* Forgets what one request left in a transfer: its headers, its answer, its result. */
static void clear_request(pigeon_h2_transfer *transfer) {
    curl_slist_free_all(transfer->headers);
    transfer->headers = NULL;
    for (int index = 0; index < transfer->response_header_count; index++) {
        free(transfer->response_headers[index]);
    }
    transfer->response_header_count = 0;
    if (transfer->body_capacity > MAX_KEPT_BODY_CAPACITY) {
        free(transfer->body);
        transfer->body = NULL;
        transfer->body_capacity = 0;
    }
    transfer->body_length = 0;
    transfer->error[0] = '\0';
    transfer->result = 0;
    transfer->context = NULL;
    transfer->client = NULL;
}

void pigeon_h2_client_recycle(pigeon_h2_client *client, pigeon_h2_transfer *transfer) {
    if (transfer == NULL) return;
    if (client == NULL || client->idle_count >= MAX_IDLE_TRANSFERS) {
        pigeon_h2_transfer_free(transfer);
        return;
    }
    clear_request(transfer);
    transfer->next_idle = client->idle;
    client->idle = transfer;
    client->idle_count++;
}

int pigeon_h2_client_idle_transfers(const pigeon_h2_client *client) { return client->idle_count; }

void pigeon_h2_client_trim(pigeon_h2_client *client) {
    while (client->idle != NULL) {
        pigeon_h2_transfer *transfer = client->idle;
        client->idle = transfer->next_idle;
        pigeon_h2_transfer_free(transfer);
    }
    client->idle_count = 0;
}

/* Whether a request's TLS settings are the ones a handle was set up with: the same strings (the
 * driving thread lends its client's settings from the same buffers at every request). */
static int same_tls(const pigeon_h2_tls *kept, const pigeon_h2_tls *tls) {
    pigeon_h2_tls none = {0};
    if (tls == NULL) tls = &none;
    return kept->ca_file == tls->ca_file && kept->client_cert == tls->client_cert
        && kept->client_cert_type == tls->client_cert_type && kept->client_key == tls->client_key
        && kept->client_key_password == tls->client_key_password;
}

/* An idle transfer of the client's (its easy handle as the last request left it), or a new one;
 * NULL when out of memory or libcurl cannot make a handle (error says which). */
static pigeon_h2_transfer *take_transfer(pigeon_h2_client *client, char *error, size_t error_capacity) {
    if (client != NULL && client->idle != NULL) {
        pigeon_h2_transfer *transfer = client->idle;
        client->idle = transfer->next_idle;
        client->idle_count--;
        transfer->next_idle = NULL;
        return transfer;
    }
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
    return transfer;
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

pigeon_h2_transfer *pigeon_h2_transfer_new(pigeon_h2_client *client, const char *method, const char *url,
                                           const char *const *headers, size_t header_count, const uint8_t *body,
                                           size_t body_length, const pigeon_h2_tls *tls,
                                           long timeout_ms, int fresh_connection, void *context, char *error,
                                           size_t error_capacity) {
    pigeon_h2_transfer *transfer = take_transfer(client, error, error_capacity);
    if (transfer == NULL) return NULL;
    transfer->context = context;
    const char *name = method != NULL ? method : "POST";
    int is_get = strcmp(name, "GET") == 0;
    int same_shape = transfer->configured && strlen(name) < sizeof transfer->configured_method
        && strcmp(transfer->configured_method, name) == 0 && transfer->configured_fresh == (fresh_connection != 0)
        && transfer->configured_timeout_ms == timeout_ms && same_tls(&transfer->configured_tls, tls);
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
    if (same_shape) {
        SET(CURLOPT_URL, url);
        if (!is_get) {
            SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_length);
            SET(CURLOPT_COPYPOSTFIELDS, (const char *)body);
        }
        SET(CURLOPT_HTTPHEADER, transfer->headers);
        if (code != CURLE_OK) {
            snprintf(error, error_capacity, "curl option refused: %s", curl_easy_strerror(code));
            pigeon_h2_transfer_free(transfer);
            return NULL;
        }
        return transfer;
    }
    /* Another shape (or a handle set up for none yet): libcurl's defaults, then every option. */
    if (transfer->used) curl_easy_reset(easy);
    transfer->used = 1;
    transfer->configured = 0;
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PRIVATE, transfer);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    SET(CURLOPT_PIPEWAIT, 1L);
    if (is_get) {
        SET(CURLOPT_HTTPGET, 1L);
    } else {
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_length);
        SET(CURLOPT_COPYPOSTFIELDS, (const char *)body);
        /* DELETE, PUT: a body sent like a POST's under another method. */
        if (strcmp(name, "POST") != 0) SET(CURLOPT_CUSTOMREQUEST, name);
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
    if (strlen(name) < sizeof transfer->configured_method) {
        strcpy(transfer->configured_method, name);
        transfer->configured_fresh = fresh_connection != 0;
        transfer->configured_timeout_ms = timeout_ms;
        transfer->configured_tls = tls != NULL ? *tls : (pigeon_h2_tls){0};
        transfer->configured = 1;
    }
    return transfer;
}

void pigeon_h2_transfer_free(pigeon_h2_transfer *transfer) {
    if (transfer == NULL) return;
    if (transfer->easy) curl_easy_cleanup(transfer->easy);
    clear_request(transfer);
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
