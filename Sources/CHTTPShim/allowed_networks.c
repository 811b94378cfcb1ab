#include "pigeon_http.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* Whether the first `bits` bits of `a` and `b` agree. */
static int same_prefix(const uint8_t *a, const uint8_t *b, unsigned int bits) {
    unsigned int whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, whole) != 0) return 0;
    if (rest == 0) return 1;
    uint8_t mask = (uint8_t)(0xFFu << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

int pigeon_http_networks_contain(const pigeon_http_network *networks, size_t count,
                                 const struct sockaddr *address) {
    if (address == NULL) return 0;
    uint8_t bytes[16];
    uint8_t family;
    if (address->sa_family == AF_INET) {
        memcpy(bytes, &((const struct sockaddr_in *)address)->sin_addr, 4);
        family = 4;
    } else if (address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(v6)) {
            /* An IPv4 client of a dual-stack listener: matched against the IPv4 networks. */
            memcpy(bytes, &v6->s6_addr[12], 4);
            family = 4;
        } else {
            memcpy(bytes, v6->s6_addr, 16);
            family = 6;
        }
    } else {
        return 0;
    }
    unsigned int width = family == 4 ? 32 : 128;
    for (size_t index = 0; index < count; index++) {
        const pigeon_http_network *network = &networks[index];
        if (network->family != family || network->prefix_length > width) continue;
        if (same_prefix(network->bytes, bytes, network->prefix_length)) return 1;
    }
    return 0;
}
