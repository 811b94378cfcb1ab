#include "pigeon_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "address_counts.h"
#include "tls_identity.h"

/* TLS 1.2 and 1.3 only (GnuTLS priority string). */
static const char tls_priorities[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:"
    /* TLS 1.2: forward secrecy and authenticated encryption only (no static RSA, no CBC). */
    "-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD";
/* A refused body the client sends without waiting (no "Expect: 100-continue") is read and
 * thrown away up to this size before the answer goes out: closing on a client still sending
 * makes the kernel reset the connection, and the client loses the answer. Beyond it, or when the
 * client waits for "100 Continue", the answer goes out at once. Nothing is buffered either way. */
static const unsigned long long drain_limit = 16ull * 1024 * 1024;

static const char client_certificate_required[] =
    "a client certificate signed by the configured CA (bankClientCaFile) is required\n";

/* One open connection: what the deadline reaper needs. */
typedef struct connection_record {
    struct connection_record *previous, *next;
    struct pigeon_http_server *server;
    int fd;
    /* Milliseconds (monotonic) since the server began waiting for the next request; 0 while a
     * request is being handled or answered. */
    _Atomic uint64_t waiting_since_ms;
    /* Client certificate check: 0 not yet, 1 accepted, 2 refused. Touched by its I/O thread. */
    int client_certificate;
    /* When it opened (monotonic ms); whether a head of it passed the checks (the unauthenticated
     * deadline no longer applies); whether it still counts among the unauthenticated connections
     * (until a request of it carried valid credentials or an accepted client certificate, or it
     * was cut, evicted or closed). */
    uint64_t started_ms;
    _Atomic int head_passed;
    _Atomic int counted;
    /* A head of it carried wrong credentials: among unauthenticated connections, it is cut first
     * to make room (a guesser's connections go before a newcomer that has not spoken yet). */
    _Atomic int refused_credentials;
    /* A request of it is under way: from its head passing the checks until it is answered (the
     * request deadline still bounds a body that arrives slowly). */
    _Atomic int in_request;
    /* Cut by the gateway (shut down to make room, or at a deadline) and not closed yet: it no
     * longer counts against the listener's connection limits (under connections_lock). */
    int cut;
    address_key address; /* the client's, as unauthenticated connections are counted */
} connection_record;

enum exchange_phase {
    PHASE_RECEIVING, /* head arrived, body arriving */
    PHASE_HANDLING,  /* the handler has it; the connection is suspended */
    PHASE_READY,     /* a response is set; the connection was resumed */
    PHASE_DROP,      /* close without answering */
    PHASE_DONE,      /* the response is queued */
};

struct pigeon_http_exchange {
    struct pigeon_http_server *server;
    struct MHD_Connection *connection;
    connection_record *record;
    /* One reference for libmicrohttpd (released when the request completes) and one for the
     * handler while it holds the exchange (released by pigeon_http_complete). */
    _Atomic int references;
    enum exchange_phase phase;
    /* Set once by whoever answers: pigeon_http_complete, or pigeon_http_stop (which then answers
     * 503 and the later completion is dropped without touching the freed server). */
    _Atomic int claimed;
    int close_connection;   /* set by pigeon_http_stop for its 503 */
    struct pigeon_http_exchange *previous_in_flight, *next_in_flight;
    const char *method;
    const char *path;
    char *query;
    size_t query_length;
    uint8_t *body;
    size_t body_length;
    size_t body_capacity;
    size_t body_limit;
    int too_large;
    int draining;           /* reading a refused body to discard it, then answering */
    unsigned int status;
    struct MHD_Response *response;
    char peer[64];
};

struct pigeon_http_server {
    struct MHD_Daemon *daemon;
    pigeon_http_admit admit;
    pigeon_http_handler handler;
    pigeon_http_logger logger;
    void *context;
    int require_client_certificate;
    uint64_t deadline_ms;
    /* HTTPS: the certificate chain and key handshakes present (replaceable while serving). */
    int has_identity;
    tls_identity_slot identities;

    pthread_mutex_t connections_lock; /* records, connection_count */
    connection_record *records;
    unsigned int connection_count;
    _Atomic unsigned long deadline_closures;
    /* Connections not authenticated yet: their cap, their deadline, and what was turned away. */
    _Atomic unsigned int unauthenticated_count;
    unsigned int unauthenticated_limit;
    unsigned int unauthenticated_per_address_limit;
    address_counts *unauthenticated_by_address; /* under connections_lock */
    uint64_t unauthenticated_deadline_ms;
    _Atomic unsigned long unauthenticated_refusals;
    _Atomic unsigned long unauthenticated_closures;
    _Atomic unsigned long unauthenticated_evictions;
    /* Client addresses served (none: every address), checked before anything is counted. */
    pigeon_http_network *allowed_networks;
    size_t allowed_network_count;
    _Atomic unsigned long allowlist_refusals;
    /* With the unauthenticated cap on (the bank's listener): the connection limits enforced on
     * connections not yet cut (libmicrohttpd's own limits, which count a cut connection until its
     * I/O thread closes it, are set above them as a backstop). Under connections_lock. */
    unsigned int live_limit;
    unsigned int live_per_address_limit;
    unsigned int live_count;
    address_counts *live_by_address;

    pthread_mutex_t flight_lock; /* in_flight list, exchange phases after dispatch */
    struct pigeon_http_exchange *in_flight;
    unsigned int in_flight_count;

    pthread_t reaper;
    int reaper_started;
    _Atomic int stopping;
};

static uint64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

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

static void release(struct pigeon_http_exchange *exchange) {
    if (atomic_fetch_sub(&exchange->references, 1) != 1) return;
    if (exchange->response != NULL) MHD_destroy_response(exchange->response);
    free(exchange->body);
    free(exchange->query);
    free(exchange);
}

/* MARK: connections and the deadline */

/* `record` no longer counts among the unauthenticated connections (it authenticated, was cut,
 * evicted or closed); only the first call counts. The caller holds connections_lock. */
static void uncount(struct pigeon_http_server *server, connection_record *record) {
    if (!atomic_exchange(&record->counted, 0)) return;
    atomic_fetch_sub(&server->unauthenticated_count, 1);
    if (server->unauthenticated_by_address) address_counts_decrement(server->unauthenticated_by_address, record->address);
}

/* `record` no longer counts against the live connection limits (it was cut, or it closed); only
 * the first call counts. The caller holds connections_lock. */
static void set_cut(struct pigeon_http_server *server, connection_record *record) {
    if (record->cut) return;
    record->cut = 1;
    if (server->live_count > 0) server->live_count--;
    if (server->live_by_address) address_counts_decrement(server->live_by_address, record->address);
}

/* Shuts `record`'s connection down (libmicrohttpd closes it when its I/O thread gets to it)
 * and stops counting it anywhere. The caller holds connections_lock. */
static void cut_connection(struct pigeon_http_server *server, connection_record *record) {
    shutdown(record->fd, SHUT_RDWR);
    uncount(server, record);
    set_cut(server, record);
}

static void notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                              enum MHD_ConnectionNotificationCode code) {
    struct pigeon_http_server *server = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        connection_record *record = calloc(1, sizeof *record);
        if (record == NULL) return;
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        record->fd = info ? info->connect_fd : -1;
        record->server = server;
        record->started_ms = now_ms();
        atomic_store(&record->waiting_since_ms, record->started_ms);
        const union MHD_ConnectionInfo *client =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        record->address = address_key_of(client ? client->client_addr : NULL);
        atomic_store(&record->counted, 1);
        atomic_fetch_add(&server->unauthenticated_count, 1);
        pthread_mutex_lock(&server->connections_lock);
        if (server->unauthenticated_by_address) address_counts_increment(server->unauthenticated_by_address, record->address);
        server->live_count++;
        if (server->live_by_address) address_counts_increment(server->live_by_address, record->address);
        record->next = server->records;
        if (server->records) server->records->previous = record;
        server->records = record;
        server->connection_count++;
        pthread_mutex_unlock(&server->connections_lock);
        *socket_context = record;
        return;
    }
    /* Closed: libmicrohttpd calls this before it closes the socket, so the reaper, which holds
     * the same lock, never shuts down a descriptor that was reused. */
    connection_record *record = *socket_context;
    if (record == NULL) return;
    pthread_mutex_lock(&server->connections_lock);
    uncount(server, record);
    set_cut(server, record);
    if (record->previous) record->previous->next = record->next;
    else server->records = record->next;
    if (record->next) record->next->previous = record->previous;
    server->connection_count--;
    pthread_mutex_unlock(&server->connections_lock);
    free(record);
    *socket_context = NULL;
}

/* Whether the client sent bytes the server has not read yet. A connection with some has spoken:
 * if its head has not passed, the wait is the server's (its I/O thread busy, e.g. with a burst on
 * a loaded machine), not the client's, so it is neither cut as silent nor spared the less. */
static int has_unread_bytes(int fd) {
    int pending = 0;
    return fd >= 0 && ioctl(fd, FIONREAD, &pending) == 0 && pending > 0;
}

/* Shuts down (never closes) the socket of every connection that has waited for a whole request
 * longer than the deadline; libmicrohttpd then sees the end of the stream and closes it. */
static void *reap_late_requests(void *cls) {
    struct pigeon_http_server *server = cls;
    while (!atomic_load(&server->stopping)) {
        struct timespec pause = {0, 200 * 1000 * 1000};
        nanosleep(&pause, NULL);
        uint64_t now = now_ms();
        pthread_mutex_lock(&server->connections_lock);
        for (connection_record *record = server->records; record; record = record->next) {
            uint64_t since = atomic_load(&record->waiting_since_ms);
            /* `since` may be later than `now` (a response completed after `now` was read): only
             * a wait that really lasted past the deadline counts. */
            if (since != 0 && now > since && now - since > server->deadline_ms && record->fd >= 0) {
                cut_connection(server, record);
                atomic_store(&record->waiting_since_ms, 0);
                atomic_fetch_add(&server->deadline_closures, 1);
            } else if (server->unauthenticated_deadline_ms > 0 && !atomic_load(&record->head_passed) &&
                       atomic_load(&record->counted) && now > record->started_ms &&
                       now - record->started_ms > server->unauthenticated_deadline_ms && record->fd >= 0 &&
                       !has_unread_bytes(record->fd)) {
                /* Opened and no head passed the checks in time (a slow or silent handshake, no
                 * head), and nothing it sent waits for the server to read it. */
                cut_connection(server, record);
                atomic_fetch_add(&server->unauthenticated_closures, 1);
            }
        }
        pthread_mutex_unlock(&server->connections_lock);
    }
    return NULL;
}

/* A new connection that has not spoken yet is given this long to send its first head (a TLS
 * handshake queued behind a burst of others' included; the unauthenticated deadline, 5 s, cuts it
 * anyway when it stays silent) before it may be cut to make room for another of its address: a burst of the bank's own new connections, or its right calls among a
 * neighbour's wrong ones, each get to authenticate. Meanwhile the address may hold more than its
 * cap, bounded by the per-address connection limit and by the listener's cap of unauthenticated
 * connections (where the address holding the most loses first). */
#define FIRST_HEAD_GRACE_MS 5000

/* How readily an unauthenticated connection is cut to make room: 2 when a head of it carried wrong
 * credentials, 1 when a head of it passed without authenticating (a browser's `?wsdl`, a probe's
 * `/health`), 0 when it has not spoken yet (it may be the bank's, about to authenticate). */
static int eviction_rank(connection_record *record) {
    if (atomic_load(&record->refused_credentials)) return 2;
    return atomic_load(&record->head_passed) ? 1 : 0;
}

/* The unauthenticated connections `key`'s address holds (1 for every address when they are not
 * counted by address). The caller holds connections_lock. */
static unsigned int held_by(struct pigeon_http_server *server, address_key key) {
    return server->unauthenticated_by_address ? address_counts_get(server->unauthenticated_by_address, key) : 1;
}

/* Whether `record` is a better connection to cut than `chosen` (NULL: none yet): of the address
 * holding the most, then the highest eviction_rank, then the oldest. */
static int better_to_cut(connection_record *record, unsigned int count, int rank,
                         connection_record *chosen, unsigned int chosen_count, int chosen_rank) {
    return chosen == NULL || count > chosen_count ||
        (count == chosen_count && (rank > chosen_rank || (rank == chosen_rank && record->started_ms < chosen->started_ms)));
}

/* Cuts the chosen connection (see better_to_cut), or returns 0 when `chosen` is NULL. */
static int cut_chosen(struct pigeon_http_server *server, connection_record *chosen) {
    if (chosen == NULL) return 0;
    cut_connection(server, chosen);
    atomic_fetch_add(&server->unauthenticated_evictions, 1);
    return 1;
}

/* Makes room among `address`'s own unauthenticated connections (at its cap): cuts one of them,
 * with `spare_young` never one still within FIRST_HEAD_GRACE_MS of opening without a head; the
 * highest eviction_rank first, then the oldest. A request being handled (an operator's console
 * call checked against the directory, a page) is never cut; a guess with wrong credentials is,
 * even while it waits. Returns 0 when there is none to cut. The caller holds connections_lock. */
static int evict_own(struct pigeon_http_server *server, address_key address, int spare_young, uint64_t now) {
    connection_record *chosen = NULL;
    int chosen_rank = 0;
    for (connection_record *record = server->records; record; record = record->next) {
        if (!atomic_load(&record->counted) || record->fd < 0 || !address_key_equal(record->address, address)) continue;
        int rank = eviction_rank(record);
        if (rank < 2 && atomic_load(&record->in_request)) continue;
        if (spare_young && rank == 0 &&
            (now < record->started_ms + FIRST_HEAD_GRACE_MS || has_unread_bytes(record->fd))) continue;
        if (better_to_cut(record, 1, rank, chosen, 1, chosen_rank)) {
            chosen = record;
            chosen_rank = rank;
        }
    }
    return cut_chosen(server, chosen);
}

/* Makes room on the listener for a new connection from `newcomer`: cuts an unauthenticated
 * connection of the newcomer's own address or of an address holding more than it, of the
 * address holding the most first (see better_to_cut). So a crowd loses its own connections, the
 * bank's new connection gets in, and a crowd's newcomer never displaces a connection of an
 * address holding fewer (the bank's, which authenticates with its first head). A request being
 * handled is cut only when no other connection qualifies, and then only one of an address holding
 * more than the newcomer's: when a crowd's heads wait for handlers on a loaded machine, the bank
 * still gets in, and a crowd's newcomer is refused rather than cut one of its own requests.
 * (Without counts by address, any connection qualifies.) Returns 0 when there is none to cut.
 * The caller holds connections_lock. */
static int evict_for(struct pigeon_http_server *server, address_key newcomer) {
    unsigned int newcomer_holds = held_by(server, newcomer);
    for (int handled = 0; handled <= 1; handled++) {
        connection_record *chosen = NULL;
        unsigned int chosen_count = 0;
        int chosen_rank = 0;
        for (connection_record *record = server->records; record; record = record->next) {
            if (!atomic_load(&record->counted) || record->fd < 0) continue;
            int rank = eviction_rank(record);
            int in_request = rank < 2 && atomic_load(&record->in_request);
            if (in_request != handled) continue;
            unsigned int count = held_by(server, record->address);
            int own = address_key_equal(record->address, newcomer);
            if (server->unauthenticated_by_address && !(count > newcomer_holds || (own && !handled))) continue;
            if (better_to_cut(record, count, rank, chosen, chosen_count, chosen_rank)) {
                chosen = record;
                chosen_count = count;
                chosen_rank = rank;
            }
        }
        if (chosen != NULL) return cut_chosen(server, chosen);
    }
    return 0;
}

/* After a head of `record` passed without authenticating it (it has spoken, so it counts against
 * its address's cap), and when a request of it was answered: while the address holds more than its cap, e.g. after a burst admitted
 * within the grace, one of its connections is cut (see evict_own; possibly this one). */
static void trim_address(struct pigeon_http_server *server, connection_record *record) {
    if (server->unauthenticated_by_address == NULL || !atomic_load(&record->counted)) return;
    uint64_t now = now_ms();
    pthread_mutex_lock(&server->connections_lock);
    while (address_counts_get(server->unauthenticated_by_address, record->address) >
               server->unauthenticated_per_address_limit &&
           evict_own(server, record->address, 1, now)) {
    }
    pthread_mutex_unlock(&server->connections_lock);
}

/* Admits a new connection: refused when its address is not allowed. When its address holds its
 * cap of unauthenticated connections, one of that address's is cut to make room (while all of
 * them are still within their grace to speak, none is: see evict_own); when all addresses
 * together hold theirs, one of its own or of an address holding more (see evict_for), and the
 * newcomer is refused only when there is none to cut. The connections that authenticated (the
 * bank's keep-alive ones) always keep the rest of the limit. */
static enum MHD_Result admit_connection(void *cls, const struct sockaddr *address, socklen_t length) {
    (void)length;
    struct pigeon_http_server *server = cls;
    if (server->allowed_network_count > 0 &&
        !pigeon_http_networks_contain(server->allowed_networks, server->allowed_network_count, address)) {
        atomic_fetch_add(&server->allowlist_refusals, 1);
        return MHD_NO;
    }
    if (server->unauthenticated_limit == 0 && server->unauthenticated_by_address == NULL) return MHD_YES;
    int refuse = 0;
    address_key key = address_key_of(address);
    uint64_t now = now_ms();
    pthread_mutex_lock(&server->connections_lock);
    /* The listener's and the address's connection limits, counting only connections not cut:
     * at a limit an unauthenticated connection makes room (the address's own at its limit, its
     * newcomers within their grace spared), else the newcomer is refused. */
    if (server->live_limit > 0 && server->live_count >= server->live_limit) refuse = !evict_for(server, key);
    if (!refuse && server->live_by_address &&
        address_counts_get(server->live_by_address, key) >= server->live_per_address_limit) {
        refuse = !evict_own(server, key, 1, now);
    }
    if (!refuse && server->unauthenticated_by_address) {
        unsigned int held = address_counts_get(server->unauthenticated_by_address, key);
        if (held >= server->unauthenticated_per_address_limit) (void)evict_own(server, key, 1, now);
    }
    if (!refuse && server->unauthenticated_limit > 0 &&
        atomic_load(&server->unauthenticated_count) >= server->unauthenticated_limit) {
        refuse = !evict_for(server, key);
    }
    pthread_mutex_unlock(&server->connections_lock);
    if (refuse) {
        atomic_fetch_add(&server->unauthenticated_refusals, 1);
        return MHD_NO;
    }
    return MHD_YES;
}

static connection_record *record_of(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* Whether the peer presented a certificate that the trusted CA signed (checked once per
 * connection). */
static int client_certificate_accepted(struct MHD_Connection *connection,
                                       connection_record *record) {
    if (record != NULL && record->client_certificate != 0) return record->client_certificate == 1;
    int accepted = 0;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info != NULL && info->tls_session != NULL) {
        gnutls_session_t session = (gnutls_session_t)info->tls_session;
        unsigned int status = 0;
        unsigned int count = 0;
        if (gnutls_certificate_get_peers(session, &count) != NULL && count > 0 &&
            gnutls_certificate_verify_peers2(session, &status) == GNUTLS_E_SUCCESS &&
            status == 0) {
            accepted = 1;
        }
    }
    if (record != NULL) record->client_certificate = accepted ? 1 : 2;
    return accepted;
}

/* MARK: requests */

static enum MHD_Result append_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
    (void)kind;
    struct pigeon_http_exchange *exchange = cls;
    size_t key_length = strlen(key);
    size_t value_length = value ? strlen(value) : 0;
    size_t needed = exchange->query_length + key_length + value_length + 3;
    if (needed > 8192) return MHD_NO; /* the head is bounded; so is its query */
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

/* libmicrohttpd's unescape callback that leaves the text as it is. */
static size_t keep_escaped(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    return strlen(text);
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

/* Hands the request to the handler with its connection suspended. */
static enum MHD_Result dispatch(struct pigeon_http_server *server,
                                struct pigeon_http_exchange *exchange) {
    if (exchange->record) atomic_store(&exchange->record->waiting_since_ms, 0);
    atomic_fetch_add(&exchange->references, 1);
    MHD_suspend_connection(exchange->connection);
    pthread_mutex_lock(&server->flight_lock);
    exchange->phase = PHASE_HANDLING;
    exchange->next_in_flight = server->in_flight;
    if (server->in_flight) server->in_flight->previous_in_flight = exchange;
    server->in_flight = exchange;
    server->in_flight_count++;
    pthread_mutex_unlock(&server->flight_lock);
    server->handler(server->context, exchange);
    return MHD_YES;
}

/* Queues the response the handler (or pigeon_http_stop) set. */
static enum MHD_Result answer(struct pigeon_http_exchange *exchange) {
    pthread_mutex_lock(&exchange->server->flight_lock);
    enum exchange_phase phase = exchange->phase;
    struct MHD_Response *response = exchange->response;
    exchange->response = NULL;
    exchange->phase = PHASE_DONE;
    pthread_mutex_unlock(&exchange->server->flight_lock);
    if (phase == PHASE_DROP || response == NULL) {
        if (response) MHD_destroy_response(response);
        return MHD_NO;
    }
    if (exchange->too_large || exchange->close_connection) {
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    enum MHD_Result result = MHD_queue_response(exchange->connection, exchange->status, response);
    MHD_destroy_response(response);
    return result;
}


/* Answers `status` with `text` and closes the connection: for heads that must not be served, and
 * whose body (if any) must not be read as the next request. */
static enum MHD_Result refuse_head(struct MHD_Connection *connection, unsigned int status,
                                   const char *text) {
    struct MHD_Response *response =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (response == NULL) return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    enum MHD_Result result = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return result;
}

/* Counts header fields whose name or value holds a NUL, CR or LF byte. */
/* What scanning a head's header lines found. */
typedef struct head_scan {
    int bad_bytes;    /* NUL, CR or LF in a name or value */
    int bad_names;    /* a name with whitespace or another byte RFC 9110 does not allow in one */
    int folded;       /* a line continued on the next (obs-fold) */
    int lengths;      /* Content-Length lines */
    int encodings;    /* Transfer-Encoding lines */
} head_scan;

/* RFC 9110 tchar: the bytes a header name is made of. */
static int is_token_byte(unsigned char byte) {
    if (byte >= '0' && byte <= '9') return 1;
    if ((byte | 0x20) >= 'a' && (byte | 0x20) <= 'z') return 1;
    return byte != 0 && strchr("!#$%&'*+-.^_`|~", byte) != NULL;
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size) {
    (void)kind;
    head_scan *scan = cls;
    if (key == NULL || strlen(key) != key_size || memchr(key, '\r', key_size) || memchr(key, '\n', key_size)) {
        scan->bad_bytes++;
        return MHD_YES;
    }
    if (value != NULL && (strlen(value) != value_size || memchr(value, '\r', value_size) ||
                          memchr(value, '\n', value_size))) {
        scan->bad_bytes++;
    }
    for (size_t index = 0; index < key_size; index++) {
        if (!is_token_byte((unsigned char)key[index])) {
            scan->bad_names++;
            break;
        }
    }
    /* libmicrohttpd 0.9.75 parses a header line in place: the name, a NUL where the colon was,
     * optional spaces or tabs, the value. A folded line (a continuation starting with a space or
     * tab) is joined into a copy elsewhere, with its text appended to the name: "X-A: 1\r\n B"
     * reads as the name "X-AB". So a value that does not follow its name that way was folded. */
    if (value != NULL) {
        const char *after = key + key_size + 1;
        if (value < after || value - after > 256) {
            scan->folded++;
        } else {
            for (const char *cursor = after; cursor < value; cursor++) {
                if (*cursor != ' ' && *cursor != '\t') {
                    scan->folded++;
                    break;
                }
            }
        }
    }
    if (strncasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH, strlen(MHD_HTTP_HEADER_CONTENT_LENGTH)) == 0) scan->lengths++;
    if (strncasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING, strlen(MHD_HTTP_HEADER_TRANSFER_ENCODING)) == 0) scan->encodings++;
    return MHD_YES;
}

/* Why a request head must be refused (400) before anything reads its body, or NULL: a
 * Transfer-Encoding other than chunked (it would hold the request until the deadline), a
 * Content-Length that is not plain digits or that comes with Transfer-Encoding, more than one of
 * either, a name that is not a token ("Transfer-Encoding : chunked"), a folded line (each could
 * make a proxy in front and this server frame the body differently, so that its tail is read as
 * a request of its own), a header holding NUL, CR or LF. */
static const char *malformed_head(struct MHD_Connection *connection) {
    head_scan scan = {0};
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, scan_header, &scan);
    if (scan.bad_bytes > 0) return "a header holds a NUL, CR or LF byte\n";
    if (scan.bad_names > 0) return "a header name holds whitespace or another byte not allowed in a name\n";
    if (scan.folded > 0) return "a header line is folded (continued on the next line)\n";
    if (scan.lengths > 1 || scan.encodings > 1) return "Content-Length or Transfer-Encoding given more than once\n";
    const char *encoding =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    const char *length =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (scan.encodings > 0 && (encoding == NULL || strcasecmp(encoding, "chunked") != 0)) {
        return "unsupported Transfer-Encoding (only chunked)\n";
    }
    if (scan.lengths > 0) {
        if (encoding != NULL) return "Content-Length and Transfer-Encoding together\n";
        if (length == NULL) return "malformed Content-Length\n";
        size_t digits = strspn(length, "0123456789");
        if (digits == 0 || digits > 19 || length[digits] != '\0') return "malformed Content-Length\n";
    }
    return NULL;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *connection,
                                      const char *url, const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **request_state) {
    (void)version;
    struct pigeon_http_server *server = cls;
    struct pigeon_http_exchange *exchange = *request_state;

    if (exchange == NULL) {
        connection_record *record = record_of(connection);
        if (server->require_client_certificate &&
            !client_certificate_accepted(connection, record)) {
            return refuse_head(connection, MHD_HTTP_FORBIDDEN, client_certificate_required);
        }
        const char *malformed = malformed_head(connection);
        if (malformed != NULL) return refuse_head(connection, MHD_HTTP_BAD_REQUEST, malformed);
        if (record != NULL) {
            atomic_store(&record->head_passed, 1);
            atomic_store(&record->in_request, 1);
            /* An accepted client certificate authenticates the connection; without one, a
             * request carrying valid credentials does (pigeon_http_authenticated, from admit). */
            if (server->require_client_certificate && atomic_load(&record->counted)) {
                pthread_mutex_lock(&server->connections_lock);
                uncount(server, record);
                pthread_mutex_unlock(&server->connections_lock);
            }
        }
        exchange = calloc(1, sizeof *exchange);
        if (exchange == NULL) return MHD_NO;
        atomic_store(&exchange->references, 1);
        exchange->server = server;
        exchange->connection = connection;
        exchange->record = record;
        exchange->method = method;
        exchange->path = url;
        *request_state = exchange;
        describe_peer(exchange);
        if (MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, append_query, exchange) <
            0) {
            return MHD_NO;
        }
        long limit = server->admit(server->context, exchange);
        if (record != NULL) trim_address(server, record);
        const char *declared =
            MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long length = 0;
        if (declared != NULL) {
            char *end = NULL;
            length = strtoull(declared, &end, 10);
            if (end == declared) length = 0;
        }
        if (limit < 0 || length > (unsigned long long)limit) {
            exchange->too_large = 1;
            const char *expect =
                MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
            int waits = expect != NULL && strcasecmp(expect, "100-continue") == 0;
            if (waits || length == 0 || length > drain_limit) {
                /* Answered at once; the body is never read. */
                return dispatch(server, exchange);
            }
            exchange->draining = 1;
            return MHD_YES;
        }
        exchange->body_limit = (size_t)limit;
        return MHD_YES;
    }

    switch (exchange->phase) {
    case PHASE_RECEIVING:
        break;
    case PHASE_READY:
    case PHASE_DROP:
        return answer(exchange);
    case PHASE_HANDLING:
    case PHASE_DONE:
        *upload_data_size = 0;
        return MHD_YES;
    }

    if (*upload_data_size != 0) {
        size_t chunk = *upload_data_size;
        *upload_data_size = 0;
        if (exchange->draining) return MHD_YES;
        if (exchange->body_length + chunk > exchange->body_limit) {
            /* A body without a declared length grew past its limit: nothing more is read, and
             * libmicrohttpd cannot answer in the middle of a body, so the connection closes. */
            return MHD_NO;
        }
        if (exchange->body_length + chunk > exchange->body_capacity) {
            size_t capacity = exchange->body_capacity ? exchange->body_capacity : 4096;
            while (capacity < exchange->body_length + chunk) capacity *= 2;
            if (capacity > exchange->body_limit) capacity = exchange->body_limit;
            uint8_t *grown = realloc(exchange->body, capacity);
            if (grown == NULL) return MHD_NO;
            exchange->body = grown;
            exchange->body_capacity = capacity;
        }
        memcpy(exchange->body + exchange->body_length, upload_data, chunk);
        exchange->body_length += chunk;
        return MHD_YES;
    }
    return dispatch(server, exchange);
}

static void request_completed(void *cls, struct MHD_Connection *connection, void **request_state,
                              enum MHD_RequestTerminationCode code) {
    (void)code;
    connection_record *record = record_of(connection);
    if (record) {
        atomic_store(&record->in_request, 0);
        atomic_store(&record->waiting_since_ms, now_ms());
        /* Answered without authenticating: it may be cut now, so its address is brought back
         * to its cap if requests under way kept it above. */
        if (cls) trim_address(cls, record);
    }
    struct pigeon_http_exchange *exchange = *request_state;
    if (exchange == NULL) return;
    *request_state = NULL;
    release(exchange);
}

void pigeon_http_complete(pigeon_http_exchange *exchange, unsigned int status,
                          const uint8_t *body, size_t length, const char *const *names,
                          const char *const *values, size_t header_count, int drop_connection) {
    pigeon_http_complete_owned(exchange, status, body, length, NULL, NULL, names, values, header_count,
                               drop_connection);
}

void pigeon_http_complete_owned(pigeon_http_exchange *exchange, unsigned int status,
                                const uint8_t *body, size_t length, pigeon_http_body_release release_body,
                                void *owner, const char *const *names, const char *const *values,
                                size_t header_count, int drop_connection) {
    int unclaimed = 0;
    if (!atomic_compare_exchange_strong(&exchange->claimed, &unclaimed, 1)) {
        /* pigeon_http_stop answered it already. */
        if (release_body) release_body(owner);
        release(exchange);
        return;
    }
    struct pigeon_http_server *server = exchange->server;
    struct MHD_Response *response = NULL;
    if (!drop_connection) {
        if (release_body) {
            /* libmicrohttpd calls release_body(owner) when it destroys the response. */
            response = MHD_create_response_from_buffer_with_free_callback_cls(length, (void *)body, release_body, owner);
            if (response == NULL) release_body(owner);
        } else {
            response = MHD_create_response_from_buffer(length, (void *)body, MHD_RESPMEM_MUST_COPY);
        }
        for (size_t index = 0; response != NULL && index < header_count; index++) {
            MHD_add_response_header(response, names[index], values[index]);
        }
    } else if (release_body) {
        release_body(owner);
    }
    /* The resume happens under the lock: pigeon_http_stop waits for an empty in-flight list, so
     * no connection is still suspended when it stops the daemon. */
    pthread_mutex_lock(&server->flight_lock);
    exchange->response = response;
    exchange->status = status;
    exchange->phase = response == NULL ? PHASE_DROP : PHASE_READY;
    if (exchange->previous_in_flight)
        exchange->previous_in_flight->next_in_flight = exchange->next_in_flight;
    else server->in_flight = exchange->next_in_flight;
    if (exchange->next_in_flight)
        exchange->next_in_flight->previous_in_flight = exchange->previous_in_flight;
    server->in_flight_count--;
    MHD_resume_connection(exchange->connection);
    pthread_mutex_unlock(&server->flight_lock);
    release(exchange);
}

/* GnuTLS asks for the certificate at each handshake. libmicrohttpd gives the callback no
 * context of its own, but it makes the connection the session's pointer, and the connection's
 * socket context is our record (set before any handshake), which names the server. */
static int present_identity(gnutls_session_t session, const gnutls_datum_t *requested_cas,
                            int requested_count, const gnutls_pk_algorithm_t *algorithms,
                            int algorithm_count, gnutls_pcert_st **chain,
                            unsigned int *chain_length, gnutls_privkey_t *key) {
    (void)requested_cas; (void)requested_count; (void)algorithms; (void)algorithm_count;
    struct MHD_Connection *connection = gnutls_session_get_ptr(session);
    if (connection == NULL) return -1;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    connection_record *record = info ? info->socket_context : NULL;
    if (record == NULL || record->server == NULL || !record->server->has_identity) return -1;
    if (record->server->require_client_certificate) {
        /* The client's certificate is required and checked in the handshake itself: a client
         * without one, or with one the CA did not sign, never gets as far as a request head. */
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
        gnutls_session_set_verify_cert(session, NULL, 0);
    }
    return tls_identity_slot_select(&record->server->identities, chain, chain_length, key);
}

/* MARK: the server */

int pigeon_http_start(const pigeon_http_config *config, pigeon_http_server **out, char *error,
                      size_t error_capacity) {
    *out = NULL;
    struct sockaddr_in address4;
    struct sockaddr_in6 address6;
    const struct sockaddr *address = NULL;
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                         MHD_USE_ERROR_LOG;

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
    if (config->tls_client_ca_pem != NULL && config->tls_certificate_pem == NULL) {
        snprintf(error, error_capacity, "client certificates need TLS (a certificate and key)");
        return -1;
    }

    tls_identity *identity = NULL;
    if (config->tls_certificate_pem != NULL) {
        identity = tls_identity_load(config->tls_certificate_pem,
                                     config->tls_key_pem ? config->tls_key_pem : "", error,
                                     error_capacity);
        if (identity == NULL) return -1;
    }
    struct pigeon_http_server *server = calloc(1, sizeof *server);
    if (server == NULL) {
        tls_identity_free(identity);
        snprintf(error, error_capacity, "out of memory");
        return -1;
    }
    if (identity != NULL) {
        server->has_identity = 1;
        tls_identity_slot_init(&server->identities, identity);
    }
    server->admit = config->admit;
    server->handler = config->handler;
    server->logger = config->logger;
    server->context = config->context;
    server->require_client_certificate = config->tls_client_ca_pem != NULL;
    server->deadline_ms = (uint64_t)(config->request_deadline_seconds ? config->request_deadline_seconds : 30) * 1000u;
    server->unauthenticated_limit = config->unauthenticated_limit;
    server->unauthenticated_per_address_limit = config->unauthenticated_per_address_limit;
    if (config->unauthenticated_per_address_limit > 0) {
        /* Room for every connection the listener may hold, each from an address of its own. */
        server->unauthenticated_by_address = address_counts_new(config->connection_limit + 1);
    }
    /* With the unauthenticated cap, the gateway enforces the connection limits itself on the
     * connections it has not cut, and libmicrohttpd's (twice as high) only backstop them: a
     * burst of cut connections its busy I/O thread has not closed yet must not turn the bank's
     * next connection away. */
    unsigned int mhd_connection_limit = config->connection_limit;
    unsigned int mhd_per_address_limit = config->per_address_limit;
    if (config->unauthenticated_limit > 0 || config->unauthenticated_per_address_limit > 0) {
        server->live_limit = config->connection_limit;
        mhd_connection_limit = config->connection_limit * 2;
        if (config->per_address_limit > 0) {
            server->live_per_address_limit = config->per_address_limit;
            server->live_by_address = address_counts_new(mhd_connection_limit + 1);
            mhd_per_address_limit = config->per_address_limit * 2;
        }
    }
    server->unauthenticated_deadline_ms = (uint64_t)config->unauthenticated_deadline_seconds * 1000u;
    if (config->allowed_network_count > 0) {
        server->allowed_networks = calloc(config->allowed_network_count, sizeof *server->allowed_networks);
        if (server->allowed_networks == NULL) {
            if (server->has_identity) tls_identity_slot_destroy(&server->identities);
            address_counts_free(server->unauthenticated_by_address);
            address_counts_free(server->live_by_address);
            free(server);
            snprintf(error, error_capacity, "out of memory");
            return -1;
        }
        memcpy(server->allowed_networks, config->allowed_networks,
               config->allowed_network_count * sizeof *server->allowed_networks);
        server->allowed_network_count = config->allowed_network_count;
    }
    pthread_mutex_init(&server->connections_lock, NULL);
    pthread_mutex_init(&server->flight_lock, NULL);

    unsigned int threads = config->io_threads ? config->io_threads : 1;
    struct MHD_OptionItem options[20];
    int count = 0;
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER,
                                               (intptr_t)log_trampoline, server};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)address};
    if (threads > 1) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                               (intptr_t)mhd_connection_limit, NULL};
    if (mhd_per_address_limit > 0) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                                   (intptr_t)mhd_per_address_limit, NULL};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                               (intptr_t)config->idle_timeout_seconds, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED,
                                               (intptr_t)request_completed, server};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION,
                                               (intptr_t)notify_connection, server};
    /* The path and the query arguments as the client sent them, still percent-encoded: each
     * handler decodes an id once, after splitting the path (so "%2F" stays inside one segment,
     * and "%2525" is "%25", not "%"). */
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK,
                                               (intptr_t)keep_escaped, NULL};
    /* No MHD_OPTION_LISTENING_ADDRESS_REUSE: libmicrohttpd's default (SO_REUSEADDR, no
     * SO_REUSEPORT) lets a restart bind at once, while a second process on the same address fails
     * at start instead of silently taking half of the connections. */
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL};
    /* A connection's head (request line and headers) must fit in this (larger heads are refused),
     * and it is what an idle keep-alive connection costs: 8 KiB, as nginx's header buffers. */
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, 8 * 1024, NULL};
    if (config->tls_certificate_pem != NULL) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                                   (void *)tls_priorities};
        if (config->tls_client_ca_pem != NULL) {
            options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0,
                                                       (void *)config->tls_client_ca_pem};
        }
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    /* The certificate comes from present_identity at each handshake (so it can be replaced);
     * passed outside the array, whose field for this option's pointer varies between versions. */
    if (server->has_identity) {
        server->daemon = MHD_start_daemon(flags, 0, admit_connection, server, access_handler, server,
                                          MHD_OPTION_ARRAY, options, MHD_OPTION_HTTPS_CERT_CALLBACK,
                                          present_identity, MHD_OPTION_END);
    } else {
        server->daemon = MHD_start_daemon(flags, 0, admit_connection, server, access_handler, server,
                                          MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    }
    if (server->daemon == NULL) {
        if (errno == EADDRINUSE) {
            snprintf(error, error_capacity,
                     "cannot listen on %s port %u: the address is in use (another process, perhaps another pigeon serve, listens there)",
                     config->address, (unsigned)config->port);
        } else {
            snprintf(error, error_capacity,
                     "cannot listen on %s port %u (address in use, a client CA file that is no PEM, or no permission)",
                     config->address, (unsigned)config->port);
        }
        if (server->has_identity) tls_identity_slot_destroy(&server->identities);
        address_counts_free(server->unauthenticated_by_address);
        address_counts_free(server->live_by_address);
        free(server->allowed_networks);
        pthread_mutex_destroy(&server->connections_lock);
        pthread_mutex_destroy(&server->flight_lock);
        free(server);
        return -1;
    }
    if (pthread_create(&server->reaper, NULL, reap_late_requests, server) == 0) {
        server->reaper_started = 1;
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

unsigned int pigeon_http_in_flight(pigeon_http_server *server) {
    pthread_mutex_lock(&server->flight_lock);
    unsigned int count = server->in_flight_count;
    pthread_mutex_unlock(&server->flight_lock);
    return count;
}

unsigned int pigeon_http_connections(pigeon_http_server *server) {
    pthread_mutex_lock(&server->connections_lock);
    unsigned int count = server->connection_count;
    pthread_mutex_unlock(&server->connections_lock);
    return count;
}

unsigned int pigeon_http_unauthenticated_connections(pigeon_http_server *server) {
    return atomic_load(&server->unauthenticated_count);
}

unsigned long pigeon_http_unauthenticated_refusals(pigeon_http_server *server) {
    return atomic_load(&server->unauthenticated_refusals);
}

unsigned long pigeon_http_unauthenticated_closures(pigeon_http_server *server) {
    return atomic_load(&server->unauthenticated_closures);
}

unsigned long pigeon_http_unauthenticated_evictions(pigeon_http_server *server) {
    return atomic_load(&server->unauthenticated_evictions);
}

unsigned long pigeon_http_allowlist_refusals(pigeon_http_server *server) {
    return atomic_load(&server->allowlist_refusals);
}

unsigned long pigeon_http_deadline_closures(pigeon_http_server *server) {
    return atomic_load(&server->deadline_closures);
}

void pigeon_http_stop(pigeon_http_server *server) {
    static const char unavailable[] = "the server is shutting down\n";
    atomic_store(&server->stopping, 1);
    if (server->reaper_started) pthread_join(server->reaper, NULL);
    /* libmicrohttpd refuses to stop with suspended connections: answer the requests still in
     * their handlers with 503. A completion already under way finishes first (it holds the lock
     * while it resumes its connection). */
    pthread_mutex_lock(&server->flight_lock);
    while (server->in_flight != NULL) {
        struct pigeon_http_exchange *exchange = server->in_flight;
        int unclaimed = 0;
        if (!atomic_compare_exchange_strong(&exchange->claimed, &unclaimed, 1)) {
            /* Its completion is waiting for this lock: let it finish. */
            pthread_mutex_unlock(&server->flight_lock);
            struct timespec pause = {0, 1000 * 1000};
            nanosleep(&pause, NULL);
            pthread_mutex_lock(&server->flight_lock);
            continue;
        }
        server->in_flight = exchange->next_in_flight;
        if (server->in_flight) server->in_flight->previous_in_flight = NULL;
        server->in_flight_count--;
        exchange->status = MHD_HTTP_SERVICE_UNAVAILABLE;
        exchange->close_connection = 1;
        exchange->response = MHD_create_response_from_buffer(
            sizeof unavailable - 1, (void *)unavailable, MHD_RESPMEM_PERSISTENT);
        exchange->phase = exchange->response ? PHASE_READY : PHASE_DROP;
        MHD_resume_connection(exchange->connection);
    }
    pthread_mutex_unlock(&server->flight_lock);
    MHD_stop_daemon(server->daemon);
    if (server->has_identity) tls_identity_slot_destroy(&server->identities);
    address_counts_free(server->unauthenticated_by_address);
    address_counts_free(server->live_by_address);
    free(server->allowed_networks);
    pthread_mutex_destroy(&server->connections_lock);
    pthread_mutex_destroy(&server->flight_lock);
    free(server);
}

int pigeon_http_replace_certificate(pigeon_http_server *server, const char *certificate_pem,
                                    const char *key_pem, char *error, size_t error_capacity) {
    if (!server->has_identity) {
        snprintf(error, error_capacity, "the listener does not serve HTTPS");
        return -1;
    }
    tls_identity *identity = tls_identity_load(certificate_pem, key_pem, error, error_capacity);
    if (identity == NULL) return -1;
    tls_identity_slot_replace(&server->identities, identity);
    return 0;
}

int pigeon_http_check_certificate(const char *certificate_pem, const char *key_pem,
                                  int64_t *not_before, int64_t *not_after, char *error,
                                  size_t error_capacity) {
    tls_identity *identity = tls_identity_load(certificate_pem, key_pem, error, error_capacity);
    if (identity == NULL) return -1;
    *not_before = tls_identity_not_before(identity);
    *not_after = tls_identity_not_after(identity);
    tls_identity_free(identity);
    return 0;
}

int64_t pigeon_http_certificate_not_after(pigeon_http_server *server) {
    return server->has_identity ? tls_identity_slot_not_after(&server->identities) : 0;
}

const char *pigeon_http_method(const pigeon_http_exchange *exchange) { return exchange->method; }
const char *pigeon_http_path(const pigeon_http_exchange *exchange) { return exchange->path; }
const char *pigeon_http_query(const pigeon_http_exchange *exchange) {
    return exchange->query ? exchange->query : "";
}
const char *pigeon_http_header(const pigeon_http_exchange *exchange, const char *name) {
    return MHD_lookup_connection_value(exchange->connection, MHD_HEADER_KIND, name);
}

uint8_t *pigeon_http_take_body(pigeon_http_exchange *exchange, size_t *length) {
    uint8_t *body = exchange->body;
    *length = body ? exchange->body_length : 0;
    exchange->body = NULL;
    exchange->body_length = 0;
    exchange->body_capacity = 0;
    return body;
}

int pigeon_http_body_too_large(const pigeon_http_exchange *exchange) { return exchange->too_large; }
const char *pigeon_http_peer(const pigeon_http_exchange *exchange) { return exchange->peer; }

void pigeon_http_authenticated(pigeon_http_exchange *exchange) {
    connection_record *record = exchange->record;
    if (record == NULL || !atomic_load(&record->counted)) return;
    pthread_mutex_lock(&exchange->server->connections_lock);
    uncount(exchange->server, record);
    pthread_mutex_unlock(&exchange->server->connections_lock);
}

void pigeon_http_refused_credentials(pigeon_http_exchange *exchange) {
    connection_record *record = exchange->record;
    if (record != NULL) atomic_store(&record->refused_credentials, 1);
}
