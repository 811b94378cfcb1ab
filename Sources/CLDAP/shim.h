/* OpenLDAP's client library, reached only through CLDAPShim. */
#define LDAP_DEPRECATED 0
#include <ldap.h>
