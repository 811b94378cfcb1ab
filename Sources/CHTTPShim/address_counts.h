#ifndef PIGEON_ADDRESS_COUNTS_H
#define PIGEON_ADDRESS_COUNTS_H

/*
 * Counts per client address (an IPv4 address, or an IPv6 address's /64), bounded in memory: how
 * many connections of each address are still unauthenticated, so one address cannot hold more
 * than its share. Not thread-safe: the caller holds its own lock.
 */

#include <stdint.h>
#include <sys/socket.h>

/* An address as counted: 4 bytes of IPv4 or the first 8 of IPv6, with its family. */
typedef struct address_key {
    uint8_t bytes[8];
    uint8_t length; /* 0: not an IP address (never counted) */
} address_key;

address_key address_key_of(const struct sockaddr *address);
/* 1 when both keys are the same address (as counted). */
int address_key_equal(address_key a, address_key b);

typedef struct address_counts address_counts;

/* A table for up to `capacity` addresses with a count above zero at once. */
address_counts *address_counts_new(unsigned int capacity);
void address_counts_free(address_counts *counts);
/* The count of `key` (0 when unknown). */
unsigned int address_counts_get(const address_counts *counts, address_key key);
/* Adds one to `key`'s count; returns 0, or -1 when the table is full (nothing counted). */
int address_counts_increment(address_counts *counts, address_key key);
/* Takes one from `key`'s count (never below zero). */
void address_counts_decrement(address_counts *counts, address_key key);

#endif
