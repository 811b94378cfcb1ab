#include "pigeon_xml.h"

#include <string.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>

typedef struct parse_state {
    const pigeon_xml_callbacks *callbacks;
    void *context;
    xmlParserCtxtPtr parser;
    pigeon_xml_error *error;
    int stopped;
    int failed;
} parse_state;

static void stop(parse_state *state) {
    state->stopped = 1;
    xmlStopParser(state->parser);
}

static void on_start(void *user, const xmlChar *local_name, const xmlChar *prefix,
                     const xmlChar *uri, int namespace_count, const xmlChar **namespaces,
                     int attribute_count, int defaulted_count, const xmlChar **attributes) {
    (void)prefix;
    (void)namespace_count;
    (void)namespaces;
    (void)defaulted_count;
    parse_state *state = user;
    if (state->stopped) return;
    int is_nil = 0;
    /* Five pointers per attribute: local name, prefix, URI, value start, value end. */
    for (int index = 0; index < attribute_count; index++) {
        const xmlChar **attribute = attributes + index * 5;
        if (strcmp((const char *)attribute[0], "nil") != 0) continue;
        size_t length = (size_t)(attribute[4] - attribute[3]);
        is_nil = (length == 4 && memcmp(attribute[3], "true", 4) == 0) ||
                 (length == 1 && attribute[3][0] == '1');
    }
    if (state->callbacks->start_element(state->context, (const char *)local_name,
                                        (const char *)uri, is_nil) != 0) {
        stop(state);
    }
}

static void on_end(void *user, const xmlChar *local_name, const xmlChar *prefix,
                   const xmlChar *uri) {
    (void)local_name;
    (void)prefix;
    (void)uri;
    parse_state *state = user;
    if (state->stopped) return;
    if (state->callbacks->end_element(state->context) != 0) stop(state);
}

static void on_text(void *user, const xmlChar *bytes, int length) {
    parse_state *state = user;
    if (state->stopped || length <= 0) return;
    if (state->callbacks->text(state->context, (const char *)bytes, (size_t)length) != 0) {
        stop(state);
    }
}

static void on_error(void *user, xmlErrorPtr error) {
    parse_state *state = user;
    if (state->failed || error == NULL || error->level < XML_ERR_ERROR) return;
    state->failed = 1;
    state->error->line = error->line;
    state->error->column = error->int2;
    const char *message = error->message ? error->message : "syntax error";
    strncpy(state->error->message, message, sizeof state->error->message - 1);
    state->error->message[sizeof state->error->message - 1] = '\0';
    size_t end = strlen(state->error->message);
    while (end > 0 && (state->error->message[end - 1] == '\n' || state->error->message[end - 1] == ' ')) {
        state->error->message[--end] = '\0';
    }
}

void pigeon_xml_initialize(void) { xmlInitParser(); }

int pigeon_xml_parse(const char *data, size_t length, const pigeon_xml_callbacks *callbacks,
                     void *context, pigeon_xml_error *error) {
    memset(error, 0, sizeof *error);
    if (length > (size_t)0x7fffffff) {
        strcpy(error->message, "document too large");
        return -1;
    }
    xmlSAXHandler handler;
    memset(&handler, 0, sizeof handler);
    handler.initialized = XML_SAX2_MAGIC;
    handler.startElementNs = on_start;
    handler.endElementNs = on_end;
    handler.characters = on_text;
    handler.cdataBlock = on_text;
    handler.serror = on_error;

    parse_state state = {callbacks, context, NULL, error, 0, 0};
    state.parser = xmlCreatePushParserCtxt(&handler, &state, NULL, 0, NULL);
    if (state.parser == NULL) {
        strcpy(error->message, "out of memory creating an XML parser");
        return -1;
    }
    xmlCtxtUseOptions(state.parser, XML_PARSE_NONET | XML_PARSE_NOWARNING | XML_PARSE_NOERROR);
    /* Fed in chunks: libxml2 refuses a single push of more than 10 MB ("Huge input lookup")
     * unless XML_PARSE_HUGE lifts limits we want to keep. */
    const size_t chunk = 64 * 1024;
    int status = 0;
    size_t offset = 0;
    while (status == 0 && !state.stopped && !state.failed && length - offset > chunk) {
        status = xmlParseChunk(state.parser, data + offset, (int)chunk, 0);
        offset += chunk;
    }
    if (status == 0 && !state.stopped && !state.failed) {
        status = xmlParseChunk(state.parser, data + offset, (int)(length - offset), 1);
    }
    int well_formed = state.parser->wellFormed;
    xmlFreeParserCtxt(state.parser);
    if (state.stopped) return 1;
    if (status != 0 || !well_formed || state.failed) {
        if (!state.failed) strcpy(error->message, "not well-formed XML");
        return -1;
    }
    return 0;
}
