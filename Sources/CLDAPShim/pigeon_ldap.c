#include "pigeon_ldap.h"

#include <ldap.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/time.h>

static pigeon_ldap_result result(int outcome, const char *what, int code) {
    pigeon_ldap_result answer;
    memset(&answer, 0, sizeof answer);
    answer.outcome = outcome;
    if (what != NULL) {
        if (code != LDAP_SUCCESS) snprintf(answer.error, sizeof answer.error, "%s: %s", what, ldap_err2string(code));
        else snprintf(answer.error, sizeof answer.error, "%s", what);
    }
    return answer;
}

/* Whether a failed bind means the directory said no to these credentials (rather than that it
 * could not be asked). */
static int refused(int code) {
    return code == LDAP_INVALID_CREDENTIALS || code == LDAP_INVALID_DN_SYNTAX || code == LDAP_NO_SUCH_OBJECT ||
           code == LDAP_INAPPROPRIATE_AUTH || code == LDAP_UNWILLING_TO_PERFORM || code == LDAP_CONSTRAINT_VIOLATION;
}

pigeon_ldap_result pigeon_ldap_sign_in(const char *url, const char *ca_file, int start_tls, int timeout_ms,
                                       const char *user_dn, const char *password, size_t password_length,
                                       const char *const *group_dns, size_t group_count, int *memberships) {
    for (size_t index = 0; index < group_count; index++) memberships[index] = 0;
    /* An empty password would be an unauthenticated bind, which succeeds: never ask. */
    if (password_length == 0) return result(PIGEON_LDAP_REFUSED, "empty password", LDAP_SUCCESS);

    LDAP *ld = NULL;
    int code = ldap_initialize(&ld, url);
    if (code != LDAP_SUCCESS || ld == NULL) return result(PIGEON_LDAP_UNAVAILABLE, "the directory URL", code);

    int version = LDAP_VERSION3;
    struct timeval timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int demand = LDAP_OPT_X_TLS_DEMAND, no_new = 0;
    ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version);
    ldap_set_option(ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF);
    ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &timeout);
    ldap_set_option(ld, LDAP_OPT_TIMEOUT, &timeout);
    ldap_set_option(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &demand);
    if (ca_file != NULL) ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, ca_file);
    /* The options above apply to a TLS context made for this handle. */
    ldap_set_option(ld, LDAP_OPT_X_TLS_NEWCTX, &no_new);

    pigeon_ldap_result answer;
    if (start_tls) {
        code = ldap_start_tls_s(ld, NULL, NULL);
        if (code != LDAP_SUCCESS) {
            answer = result(PIGEON_LDAP_UNAVAILABLE, "StartTLS", code);
            goto done;
        }
    }
    struct berval credentials = {(ber_len_t)password_length, (char *)password};
    code = ldap_sasl_bind_s(ld, user_dn, LDAP_SASL_SIMPLE, &credentials, NULL, NULL, NULL);
    if (code != LDAP_SUCCESS) {
        answer = result(refused(code) ? PIGEON_LDAP_REFUSED : PIGEON_LDAP_UNAVAILABLE, "bind", code);
        goto done;
    }
    struct berval user = {(ber_len_t)strlen(user_dn), (char *)user_dn};
    struct berval escaped = {0, NULL};
    if (ldap_bv2escaped_filter_value(&user, &escaped) != 0 || escaped.bv_val == NULL) {
        answer = result(PIGEON_LDAP_UNAVAILABLE, "escaping the user's DN for a filter", LDAP_SUCCESS);
        goto done;
    }
    char filter[2048];
    int written = snprintf(filter, sizeof filter, "(member=%s)", escaped.bv_val);
    ber_memfree(escaped.bv_val);
    if (written < 0 || (size_t)written >= sizeof filter) {
        answer = result(PIGEON_LDAP_UNAVAILABLE, "the user's DN is too long for a group search", LDAP_SUCCESS);
        goto done;
    }
    char *no_attributes[] = {LDAP_NO_ATTRS, NULL};
    answer = result(PIGEON_LDAP_BOUND, NULL, LDAP_SUCCESS);
    for (size_t index = 0; index < group_count; index++) {
        LDAPMessage *found = NULL;
        code = ldap_search_ext_s(ld, group_dns[index], LDAP_SCOPE_BASE, filter, no_attributes, 1, NULL, NULL, &timeout, 1, &found);
        if (code == LDAP_SUCCESS) {
            memberships[index] = ldap_count_entries(ld, found) > 0;
        } else if (code != LDAP_NO_SUCH_OBJECT) {
            if (found) ldap_msgfree(found);
            answer = result(PIGEON_LDAP_UNAVAILABLE, "group search", code);
            goto done;
        }
        if (found) ldap_msgfree(found);
    }
done:
    ldap_unbind_ext_s(ld, NULL, NULL);
    return answer;
}
