#ifndef PIGEON_LDAP_H
#define PIGEON_LDAP_H

/*
 * One operator's sign-in against a directory (CONTRACT §10), in one call: connect (ldaps://, or
 * ldap:// with StartTLS when asked), verify the server's certificate against a CA file, bind as
 * the user with their password, and ask for each group whether its `member` attribute names the
 * user. Blocking, bounded by the timeout; every libldap pointer stays inside.
 */

#include <stddef.h>

enum pigeon_ldap_outcome {
    PIGEON_LDAP_BOUND = 0,       /* the password is right; memberships filled */
    PIGEON_LDAP_REFUSED = 1,     /* wrong password, unknown or locked user */
    PIGEON_LDAP_UNAVAILABLE = 2, /* the directory could not be reached or asked; see error */
};

typedef struct pigeon_ldap_result {
    int outcome;
    char error[256];
} pigeon_ldap_result;

/* url: ldaps://host:port or ldap://host:port; ca_file: PEM of the CA that signed the directory's
 * certificate (NULL: the system's); start_tls: 1 to require StartTLS on ldap://; timeout_ms: for
 * the connection and each operation. memberships[i] is set to 1 when group_dns[i] lists the user. */
pigeon_ldap_result pigeon_ldap_sign_in(const char *url, const char *ca_file, int start_tls, int timeout_ms,
                                       const char *user_dn, const char *password, size_t password_length,
                                       const char *const *group_dns, size_t group_count, int *memberships);

#endif
