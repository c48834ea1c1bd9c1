/* txkit - command-line front end: `txkit info`, `txkit run`, `txkit stat`,
 * `txkit report` (the last two in stat.c). */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <txkit.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: txkit COMMAND\n"
            "commands:\n"
            "  info       version, RTM support and why, default method, thread count\n"
            "  run [--method M] [--stats[=FILE]] [--no-elide] -- CMD [ARGS...]\n"
            "             run CMD on txkit: gcc -fgnu-tm code binds to txkit's libitm\n"
            "             drop-in instead of GCC's libitm, and its pthread mutexes are\n"
            "             elided (LD_PRELOAD=libtxkit-preload.so; not with --no-elide)\n"
            "  stat [-p PID,...] [-n NAME] [--sites] [--json] [INTERVAL [COUNT]]\n"
            "             statistics of this user's running txkit processes, like vmstat\n"
            "  report [--json] FILE\n"
            "             the statistics a process dumped at exit (TXKIT_STATS=FILE)\n"
            "  version    print the version\n"
            "  help [COMMAND]  this text, or a command's\n");
}

static int cpus_available(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void cpu_model(char *buf, size_t len) {
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p += 1 + strspn(p + 1, " \t");
                p[strcspn(p, "\n")] = '\0';
                snprintf(buf, len, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

static int cmd_info(void) {
    struct txkit_rtm_info r;
    char model[128];
    txkit_rtm_info(&r);
    cpu_model(model, sizeof model);
    txkit_method_t m = txkit_get_method();
    const char *env = getenv("TXKIT_METHOD");
    int cpus = cpus_available();

    printf("txkit %s\n", txkit_version());
    printf("cpu:            %s (%s)\n", model, r.vendor);
    printf("rtm:            %s\n", r.usable ? "yes" : "no");
    printf("  why:          %s\n", r.reason);
    printf("  cpuid:        rtm=%d hle=%d rtm_always_abort=%d tsx_force_abort=%d\n", r.cpuid_rtm,
           r.cpuid_hle, r.rtm_always_abort, r.tsx_force_abort);
    if (r.probe_tries)
        printf("  probe:        %d/%d empty transactions committed\n", r.probe_commits,
               r.probe_tries);
    else
        printf("  probe:        not run (CPUID does not allow XBEGIN)\n");
    printf("method:         %s%s\n", txkit_method_name(m),
           env && *env ? " (from TXKIT_METHOD)" : " (default)");
    if (m == TXKIT_AUTO)
        printf("  order:        %s\n", r.usable ? "htm -> stm -> serial (serial while one thread runs alone)"
                                                : "stm -> serial (serial while one thread runs alone; no RTM)");
    const char *cm_env = getenv("TXKIT_CM");
    printf("contention:     %s%s\n", txkit_get_cm(), cm_env && *cm_env ? " (from TXKIT_CM)" : " (default)");
    int sched = txkit_set_sched(0);
    txkit_set_sched(sched);
    printf("scheduling:     %s (transaction-aware; TXKIT_SCHED)\n", sched ? "on" : "off");
    printf("priority:       %d (this thread's conflict priority)\n", tx_get_priority());
    printf("threads:        %d (CPUs this process may run on; benchmarks default to this)\n", cpus);
    return 0;
}

/* Where the libitm drop-in is: next to us once installed (BIN/../LIB/txkit),
 * else in the build tree we were built in. */
static int dropin_dir(char *buf, size_t len) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            int w = snprintf(buf, len, "%s/../%s/txkit", exe, TXKIT_REL_LIBDIR);
            if (w > 0 && (size_t)w < len && access(buf, F_OK) == 0) {
                char real[PATH_MAX];
                if (realpath(buf, real))
                    snprintf(buf, len, "%s", real);
                return 0;
            }
        }
    }
    snprintf(buf, len, "%s", TXKIT_BUILD_DROPIN_DIR);
    return access(buf, F_OK) == 0 ? 0 : -1;
}

/* The mutex-eliding preload library: next to the drop-in directory, both once
 * installed (LIB/libtxkit-preload.so) and in the build tree (build/lib). */
static int preload_lib(const char *dropin, char *buf, size_t len) {
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/../libtxkit-preload.so", dropin);
    if (!realpath(p, buf) || strlen(buf) >= len)
        return -1;
    return access(buf, R_OK) == 0 ? 0 : -1;
}

/* Put lib first in LD_PRELOAD (kept: whatever was there). */
static int add_preload(const char *lib) {
    const char *old = getenv("LD_PRELOAD");
    size_t need = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *v = malloc(need);
    if (!v)
        return -1;
    snprintf(v, need, "%s%s%s", lib, old && *old ? " " : "", old && *old ? old : "");
    setenv("LD_PRELOAD", v, 1);
    free(v);
    return 0;
}

static int cmd_run(int argc, char **argv) {
    const char *method = NULL, *stats = NULL;
    char stats_file[PATH_MAX + 2];
    int elide = 1;
    int i = 2;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--method") == 0 && i + 1 < argc) {
            method = argv[++i];
        } else if (strncmp(argv[i], "--method=", 9) == 0) {
            method = argv[i] + 9;
        } else if (strcmp(argv[i], "--stats") == 0) {
            stats = "1";
        } else if (strncmp(argv[i], "--stats=", 8) == 0) {
            stats = argv[i] + 8; /* a file: TXKIT_STATS takes one with a '/' */
            if (!*stats) {
                fprintf(stderr, "txkit run: --stats=: no file name\n");
                return 2;
            }
            if (!strchr(stats, '/')) {
                snprintf(stats_file, sizeof stats_file, "./%s", stats);
                stats = stats_file;
            }
        } else if (strcmp(argv[i], "--no-elide") == 0) {
            elide = 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "txkit run: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            break; /* the command, without a "--" */
        }
    }
    if (i >= argc) {
        fprintf(stderr, "txkit run: no command given\n");
        usage(stderr);
        return 2;
    }
    txkit_method_t m;
    if (method && txkit_method_parse(method, &m) != 0) {
        fprintf(stderr, "txkit run: --method %s: unknown method (auto, htm, stm, serial)\n", method);
        return 2;
    }
    if (method && m == TXKIT_HTM && !txkit_htm_usable()) {
        struct txkit_rtm_info r;
        txkit_rtm_info(&r);
        fprintf(stderr, "txkit run: --method htm: RTM is not usable here (%s)\n", r.reason);
        return 2;
    }
    char dir[PATH_MAX];
    if (dropin_dir(dir, sizeof dir) != 0) {
        fprintf(stderr, "txkit run: the libitm drop-in (lib/txkit/libitm.so.1) is not installed next to %s\n",
                argv[0]);
        return 2;
    }
    const char *old = getenv("LD_LIBRARY_PATH");
    size_t need = strlen(dir) + (old ? strlen(old) + 1 : 0) + 1;
    char *path = malloc(need);
    if (!path) {
        perror("txkit run");
        return 2;
    }
    snprintf(path, need, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_LIBRARY_PATH", path, 1);
    free(path);
    if (elide) {
        char lib[PATH_MAX];
        if (preload_lib(dir, lib, sizeof lib) != 0)
            fprintf(stderr, "txkit run: libtxkit-preload.so is not installed next to %s: "
                            "mutexes are not elided\n", dir);
        else if (add_preload(lib) != 0) {
            perror("txkit run");
            return 2;
        }
    }
    /* A lazy PLT slot resolved inside a hardware transaction aborts it every
     * time (RTM-FACTS): bind everything at load. */
    setenv("LD_BIND_NOW", "1", 0);
    if (method)
        setenv("TXKIT_METHOD", method, 1);
    if (stats)
        setenv("TXKIT_STATS", stats, 1);
    execvp(argv[i], argv + i);
    fprintf(stderr, "txkit run: %s: %s\n", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "info") == 0)
        return cmd_info();
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc, argv);
    if (strcmp(cmd, "stat") == 0)
        return cmd_stat(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("txkit %s\n", txkit_version());
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2 && strcmp(argv[2], "stat") == 0)
            stat_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "report") == 0)
            report_usage(stdout);
        else
            usage(stdout);
        return 0;
    }
    fprintf(stderr, "txkit: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
