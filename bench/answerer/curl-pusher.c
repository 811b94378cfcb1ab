/*
 * curl-pusher: libcurl's own ceiling for the fan-out benchmark.
 *
 * Sends N APNs-shaped POSTs over HTTP/2 + TLS with libcurl's multi interface, the same easy-handle
 * options as the gateway's HTTP/2 shim (Sources/CCurlShim/pigeon_h2.c: an easy handle per request,
 * reused once a request finishes as the shim keeps up to 256 idle ones, with its options kept and
 * only URL, body and headers set anew, a header list per request, PIPEWAIT, COPYPOSTFIELDS,
 * CAINFO, a header and a body callback), with at most IN_FLIGHT requests at once over
 * CONNECTIONS connections, from one thread, and no database, no payload building, no Swift.
 * What it reaches is the most a libcurl-based client can do here; the gateway's rate is bounded
 * by it.
 *
 * usage: curl-pusher URL CA.pem N IN_FLIGHT CONNECTIONS AUTHORIZATION TOPIC
 *   prints "<requests> <ok> <seconds> <requests/s> <CPU seconds>" (its own user + system time:
 *   the fan-out benchmark weighs it against the gateway's CPU a push)
 * build: cc -O2 -o curl-pusher curl-pusher.c -lcurl
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char payload[] = "{\"aps\":{\"alert\":{\"body\":\"Hello\"},\"badge\":1},\"notificationId\":\"fanout\",\"type\":\"UNIVERSAL\"}";

struct request {
    CURL *easy;
    struct curl_slist *headers;
    struct request *next_idle;
};

/* Finished requests whose easy handles the next ones reuse, as the gateway's shim does: every
 * request here has the same shape, so a reused handle keeps its options and gets only its URL,
 * body and headers anew. */
#define MAX_IDLE 256
static struct request *idle = NULL;
static int idle_count = 0;

static size_t ignore(char *data, size_t size, size_t count, void *user) {
    (void)data; (void)user;
    return size * count;
}

static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec + time.tv_nsec / 1e9;
}

static CURL *start(CURLM *multi, const char *url, const char *ca, const char *authorization, const char *topic, long n) {
    struct request *request = idle;
    CURL *easy;
    if (request != NULL) {
        idle = request->next_idle;
        idle_count--;
        easy = request->easy;
    } else {
        request = calloc(1, sizeof *request);
        easy = curl_easy_init();
    }
    char line[1024], address[1024];
    snprintf(address, sizeof address, "%s/3/device/%032lx", url, n);
    snprintf(line, sizeof line, "authorization: bearer %s", authorization);
    request->headers = curl_slist_append(request->headers, line);
    snprintf(line, sizeof line, "apns-topic: %s", topic);
    request->headers = curl_slist_append(request->headers, line);
    request->headers = curl_slist_append(request->headers, "apns-push-type: alert");
    request->headers = curl_slist_append(request->headers, "apns-priority: 10");
    request->headers = curl_slist_append(request->headers, "content-type: application/json");
    request->headers = curl_slist_append(request->headers, "Expect:");
    if (request->easy == easy) {
        curl_easy_setopt(easy, CURLOPT_URL, address);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(sizeof payload - 1));
        curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, payload);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, request->headers);
        curl_multi_add_handle(multi, easy);
        return easy;
    }
    request->easy = easy;
    curl_easy_setopt(easy, CURLOPT_URL, address);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, request);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(sizeof payload - 1));
    curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, payload);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, request->headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, ignore);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, ignore);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(easy, CURLOPT_CAINFO, ca);
    curl_easy_setopt(easy, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    curl_multi_add_handle(multi, easy);
    return easy;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: curl-pusher URL CA.pem N IN_FLIGHT CONNECTIONS AUTHORIZATION TOPIC\n");
        return 2;
    }
    const char *url = argv[1], *ca = argv[2], *authorization = argv[6], *topic = argv[7];
    long total = atol(argv[3]), in_flight = atol(argv[4]), connections = atol(argv[5]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, connections);
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, in_flight / connections + 1);
    long started = 0, finished = 0, ok = 0;
    double began = now();
    while (finished < total) {
        while (started < total && started - finished < in_flight) start(multi, url, ca, authorization, topic, started++);
        int running = 0;
        curl_multi_perform(multi, &running);
        curl_multi_poll(multi, NULL, 0, 100, NULL);
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int remaining = 0;
        while ((message = curl_multi_info_read(multi, &remaining)) != NULL) {
            if (message->msg != CURLMSG_DONE) continue;
            struct request *request = NULL;
            long status = 0;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&request);
            curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result == CURLE_OK && status == 200) ok++;
            curl_multi_remove_handle(multi, request->easy);
            curl_slist_free_all(request->headers);
            request->headers = NULL;
            if (idle_count < MAX_IDLE) {
                request->next_idle = idle;
                idle = request;
                idle_count++;
            } else {
                curl_easy_cleanup(request->easy);
                free(request);
            }
            finished++;
        }
    }
    double seconds = now() - began;
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
    printf("%ld %ld %.2f %.0f %.2f\n", total, ok, seconds, total / seconds, cpu);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return ok == total ? 0 : 1;
}
