#include "address_counts.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    address_key key;
    unsigned int count;
    int used; /* taken at least once since the last compaction (keeps probe chains whole) */
} slot;

struct address_counts {
    slot *slots;
    unsigned int size;     /* a power of two, at least twice the capacity */
    unsigned int capacity; /* addresses with a count above zero, at most */
    unsigned int used;     /* slots taken since the last compaction */
};

address_key address_key_of(const struct sockaddr *address) {
    address_key key;
    memset(&key, 0, sizeof key);
    if (address == NULL) return key;
    if (address->sa_family == AF_INET) {
        memcpy(key.bytes, &((const struct sockaddr_in *)address)->sin_addr, 4);
        key.length = 4;
    } else if (address->sa_family == AF_INET6) {
        memcpy(key.bytes, &((const struct sockaddr_in6 *)address)->sin6_addr, 8);
        key.length = 8;
    }
    return key;
}

int address_key_equal(address_key a, address_key b) {
    return a.length == b.length && memcmp(a.bytes, b.bytes, a.length) == 0;
}

static unsigned int hash(address_key key) {
    uint32_t value = 2166136261u;
    for (unsigned int index = 0; index < key.length; index++) value = (value ^ key.bytes[index]) * 16777619u;
    return value ^ key.length;
}

address_counts *address_counts_new(unsigned int capacity) {
    address_counts *counts = calloc(1, sizeof *counts);
    if (counts == NULL) return NULL;
    unsigned int size = 16;
    while (size < 2 * capacity) size *= 2;
    counts->slots = calloc(size, sizeof *counts->slots);
    if (counts->slots == NULL) {
        free(counts);
        return NULL;
    }
    counts->size = size;
    counts->capacity = capacity;
    return counts;
}

void address_counts_free(address_counts *counts) {
    if (counts == NULL) return;
    free(counts->slots);
    free(counts);
}

/* The slot holding `key`, or NULL. */
static slot *find(const address_counts *counts, address_key key) {
    unsigned int mask = counts->size - 1;
    for (unsigned int probe = 0, index = hash(key) & mask; probe < counts->size; probe++, index = (index + 1) & mask) {
        slot *candidate = &counts->slots[index];
        if (!candidate->used) return NULL;
        if (address_key_equal(candidate->key, key)) return candidate;
    }
    return NULL;
}

/* Rebuilds the table with the addresses whose count is above zero. */
static void compact(address_counts *counts) {
    slot *old = counts->slots;
    slot *fresh = calloc(counts->size, sizeof *fresh);
    if (fresh == NULL) return;
    counts->slots = fresh;
    counts->used = 0;
    unsigned int mask = counts->size - 1;
    for (unsigned int index = 0; index < counts->size; index++) {
        if (!old[index].used || old[index].count == 0) continue;
        unsigned int target = hash(old[index].key) & mask;
        while (fresh[target].used) target = (target + 1) & mask;
        fresh[target] = old[index];
        counts->used++;
    }
    free(old);
}

unsigned int address_counts_get(const address_counts *counts, address_key key) {
    if (key.length == 0) return 0;
    const slot *found = find(counts, key);
    return found ? found->count : 0;
}

int address_counts_increment(address_counts *counts, address_key key) {
    if (key.length == 0) return 0;
    slot *found = find(counts, key);
    if (found != NULL) {
        found->count++;
        return 0;
    }
    if (counts->used >= counts->capacity) compact(counts);
    if (counts->used >= counts->capacity) return -1;
    unsigned int mask = counts->size - 1;
    unsigned int index = hash(key) & mask;
    while (counts->slots[index].used) index = (index + 1) & mask;
    counts->slots[index].key = key;
    counts->slots[index].count = 1;
    counts->slots[index].used = 1;
    counts->used++;
    return 0;
}

void address_counts_decrement(address_counts *counts, address_key key) {
    if (key.length == 0) return;
    slot *found = find(counts, key);
    if (found != NULL && found->count > 0) found->count--;
}
