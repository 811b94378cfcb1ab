/* The unit tier's tripwire (scripts/test-unit.sh, scripts/test.sh): preloaded into the test run,
 * armed only in the test process itself (an `.xctest` executable) with PIGEON_TEST_TIER=unit. A
 * unit-tier test that opens a network socket (PostgreSQL, a listener, an HTTP client), or starts a
 * process (openssl, python3, curl), is refused (EACCES: the test fails with the error, under its
 * own name), and the refusal is printed with its stack and appended to $PIGEON_TRIPWIRE_LOG, which
 * the scripts check after the run (a test that swallowed the error still fails the tier): the
 * unit tier is "no PostgreSQL, no sockets, no processes" by rule, not by count. Local (AF_UNIX)
 * sockets stay allowed (the C library's name service uses them). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <execinfo.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_int armed = -1;

static int is_armed(void) {
    int state = atomic_load(&armed);
    if (state >= 0) return state;
    char path[4096];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    const char *tier = getenv("PIGEON_TEST_TIER");
    state = 0;
    if (length > 0 && tier != NULL && strcmp(tier, "unit") == 0) {
        path[length] = '\0';
        state = strstr(path, ".xctest") != NULL;
    }
    atomic_store(&armed, state);
    return state;
}

static void trip_program(const char *what, const char *path, char *const argv[]);

static void trip(const char *what) { trip_program(what, NULL, NULL); }

static void trip_program(const char *what, const char *path, char *const argv[]) {
    static const char advice[] =
        "; a test that needs it belongs to the integration tier: "
        ".enabled(if: TestTier.runsIntegration, \"integration tier (sockets): PIGEON_TEST_TIER\"). The stack:\n";
    dprintf(2, "\nunit-tier tripwire: a unit-tier test %s", what);
    if (path != NULL) {
        dprintf(2, " (%s", path);
        for (int index = 1; argv != NULL && argv[index] != NULL && index < 4; index++) dprintf(2, " %.80s", argv[index]);
        dprintf(2, ")");
    }
    dprintf(2, "%s", advice);
    void *frames[64];
    int count = backtrace(frames, 64);
    backtrace_symbols_fd(frames, count, 2);
    const char *log = getenv("PIGEON_TRIPWIRE_LOG");
    if (log != NULL) {
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dprintf(fd, "%s%s%s\n", what, path ? ": " : "", path ? path : "");
            close(fd);
        }
    }
}

int socket(int domain, int type, int protocol) {
    if ((domain == AF_INET || domain == AF_INET6) && is_armed()) {
        trip("opened a network socket");
        errno = EACCES;
        return -1;
    }
    int (*real)(int, int, int) = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    return real(domain, type, protocol);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attributes, char *const argv[], char *const envp[]) {
    if (is_armed()) {
        trip_program("started a process", path, argv);
        return EACCES;
    }
    int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                char *const[], char *const[]) = dlsym(RTLD_NEXT, "posix_spawn");
    return real(pid, path, actions, attributes, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attributes, char *const argv[], char *const envp[]) {
    if (is_armed()) {
        trip_program("started a process", file, argv);
        return EACCES;
    }
    int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                char *const[], char *const[]) = dlsym(RTLD_NEXT, "posix_spawnp");
    return real(pid, file, actions, attributes, argv, envp);
}

pid_t fork(void) {
    if (is_armed()) {
        trip("forked a process");
        errno = EACCES;
        return -1;
    }
    pid_t (*real)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
    return real();
}

int execve(const char *path, char *const argv[], char *const envp[]) {
    if (is_armed()) {
        trip_program("executed a program", path, argv);
        errno = EACCES;
        return -1;
    }
    int (*real)(const char *, char *const[], char *const[]) = dlsym(RTLD_NEXT, "execve");
    return real(path, argv, envp);
}
