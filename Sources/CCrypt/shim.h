/* libxcrypt (Debian's libcrypt): crypt_rn and crypt_gensalt_rn, reached only by PigeonCrypto's
 * PasswordHash. */
#include <crypt.h>
