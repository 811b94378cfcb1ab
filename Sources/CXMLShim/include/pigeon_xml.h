#ifndef PIGEON_XML_H
#define PIGEON_XML_H

/*
 * A thin shim over libxml2's SAX2 push parser. Swift cannot import libxml2's headers next to
 * Foundation (both bring ICU), so this header exposes only plain C types: three callbacks and one
 * parse function. No DTD loading, no entity substitution, no network.
 */

#include <stddef.h>

/* Each callback returns 0 to continue or non-zero to stop the parse. */
typedef struct pigeon_xml_callbacks {
    int (*start_element)(void *context, const char *local_name, const char *namespace_uri, int is_nil);
    int (*end_element)(void *context);
    int (*text)(void *context, const char *bytes, size_t length);
} pigeon_xml_callbacks;

/* The first syntax error libxml2 reported. */
typedef struct pigeon_xml_error {
    int line;
    int column;
    char message[256];
} pigeon_xml_error;

/* Initialises libxml2; call once before any thread parses. */
void pigeon_xml_initialize(void);

/* Parses a whole document. Returns 0 when it is well-formed and was not stopped, 1 when a
 * callback stopped it, -1 on a syntax error (described in *error). */
int pigeon_xml_parse(const char *data, size_t length, const pigeon_xml_callbacks *callbacks,
                     void *context, pigeon_xml_error *error);

#endif
