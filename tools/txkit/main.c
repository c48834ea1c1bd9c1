/* SPDX-License-Identifier: MIT */
/* txkit - command-line front end: `txkit info`, `txkit run`, `txkit stat`,
 * `txkit report` (the last two in stat.c). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <txkit.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "lockreport.h"

/* Exit statuses of every command (txkit(1) says the same). */
#define EXIT_USAGE 2

static void usage(FILE *f) {
    fprintf(f,
            "usage: txkit [-h|--help] [-V|--version] COMMAND [ARGS...]\n"
            "commands:\n"
            "  info [--json]   version, CPU, RTM support and why, methods, default method\n"
            "  run [-m METHOD] [--stats[=FILE]] [--report[=FILE]] [--no-elide] [--] CMD [ARGS...]\n"
            "                  run CMD on txkit (gcc -fgnu-tm code, elided pthread mutexes);\n"
            "                  --report: which of its locks cost the most time\n"
            "  stat [-p PID,...] [-n NAME] [-u USER] [-s] [-v] [--json] [INTERVAL [COUNT]]\n"
            "                  statistics of running txkit processes, like vmstat\n"
            "  report [--json] FILE\n"
            "                  the statistics a process dumped at exit (TXKIT_STATS=FILE)\n"
            "  version         print the version\n"
            "  help [COMMAND]  this text, or a command's (same as txkit COMMAND --help)\n"
            "Exit status: 0 success, 1 error, 2 usage error (bad command or arguments);\n"
            "txkit run exits with CMD's status (126, 127: CMD could not be run).\n"
            "See txkit(1), txkit(7) and libtxkit(3).\n");
}

static void info_usage(FILE *f) {
    fprintf(f, "usage: txkit info [--json]\n"
               "  What txkit sees on this machine: version, CPU model, whether RTM (Intel TSX)\n"
               "  is usable and why, the transaction methods, the default method and\n"
               "  contention manager (after TXKIT_METHOD, TXKIT_CM, TXKIT_SCHED), CPU count.\n"
               "  -j, --json   one JSON object (keys: version, cpu, vendor, cpus, rtm, methods,\n"
               "               method, method_from_env, cm, sched)\n"
               "  -h, --help   this text\n"
               "  Exit status: 0, 2 for bad arguments.\n");
}

static void run_usage(FILE *f) {
    fprintf(f,
            "usage: txkit run [-m METHOD] [--stats[=FILE]] [--report[=FILE]] [--no-elide] [--] CMD "
            "[ARGS...]\n"
            "  Run CMD on txkit: its gcc -fgnu-tm code binds to txkit's libitm drop-in\n"
            "  instead of GCC's libitm (LD_LIBRARY_PATH), its pthread mutexes are elided\n"
            "  (LD_PRELOAD=libtxkit-preload.so) and symbols are bound at load\n"
            "  (LD_BIND_NOW=1, so no lazy binding aborts a hardware transaction).\n"
            "  -m, --method METHOD  auto, htm, stm or serial (sets TXKIT_METHOD)\n"
            "      --stats          print statistics when CMD exits (TXKIT_STATS=1)\n"
            "      --stats=FILE     dump them to FILE for txkit report (TXKIT_STATS=FILE)\n"
            "      --report[=FILE]  when CMD ends, print the lock report to stderr (or\n"
            "                       FILE): per pthread mutex, rwlock and spinlock, and per\n"
            "                       call site, acquisitions, contended ones, time waiting\n"
            "                       and holding, threads waiting at once; sorted by the\n"
            "                       time lost waiting (TXKIT_LOCK_REPORT; one section per\n"
            "                       process, forked children too). txkit waits for CMD.\n"
            "      --report-csv=FILE  the same as CSV, one row per lock (implies --report)\n"
            "      --no-elide       do not preload the mutex-eliding library\n"
            "  -h, --help           this text\n"
            "  Exit status: CMD's; 126 when CMD cannot be executed, 127 when it is not\n"
            "  found, 1 when txkit's libraries are missing, 2 for bad arguments.\n");
}

static void version_usage(FILE *f) {
    fprintf(f, "usage: txkit version (or txkit -V, txkit --version)\n"
               "  Print \"txkit X.Y.Z\". Exit status: 0, 2 for bad arguments.\n");
}

static void help_usage(FILE *f) {
    fprintf(f, "usage: txkit help [COMMAND]\n"
               "  The list of commands, or COMMAND's options (as txkit COMMAND --help).\n"
               "  Exit status: 0, 2 for an unknown COMMAND.\n");
}

/* "txkit CMD: MESSAGE" and where to read more, on stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "txkit%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry 'txkit%s%s --help'\n", cmd ? " " : "", cmd ? cmd : "");
    return EXIT_USAGE;
}

/* getopt_long's error for the option that made it return '?' or ':'. */
int cli_option_error(const char *cmd, char **argv, int c) {
    const char *arg = argv[optind - 1];
    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", arg);
    if (optopt && !(arg[0] == '-' && arg[1] == '-'))
        return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return cli_usage_error(cmd, "unknown option '%s'", arg);
}

/* Parse the options of a command that has only -h/--help (and maybe --json);
 * returns -1 to go on, else the exit status. */
static int simple_opts(int argc, char **argv, const char *cmd, void (*help)(FILE *), int *json,
                       int max_args) {
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'}, {"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, json ? ":hj" : ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            help(stdout);
            return 0;
        }
        if (c == 'j' && json) {
            *json = 1;
            continue;
        }
        return cli_option_error(cmd, argv, c == 'j' ? '?' : c);
    }
    if (argc - optind > max_args)
        return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + max_args]);
    return -1;
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

static void info_json(const struct txkit_rtm_info *r, const char *model, txkit_method_t m,
                      const char *env, const char *cm_env, int sched, int cpus) {
    struct jw w;
    jw_init(&w, stdout);
    jw_object(&w, NULL);
    jw_string(&w, "version", txkit_version());
    jw_string(&w, "cpu", model);
    jw_string(&w, "vendor", r->vendor);
    jw_u64(&w, "cpus", (uint64_t)cpus);
    jw_object(&w, "rtm");
    jw_bool(&w, "usable", r->usable);
    jw_string(&w, "reason", r->reason);
    jw_bool(&w, "cpuid_rtm", r->cpuid_rtm);
    jw_bool(&w, "cpuid_hle", r->cpuid_hle);
    jw_bool(&w, "rtm_always_abort", r->rtm_always_abort);
    jw_bool(&w, "tsx_force_abort", r->tsx_force_abort);
    jw_u64(&w, "probe_tries", (uint64_t)r->probe_tries);
    jw_u64(&w, "probe_commits", (uint64_t)r->probe_commits);
    jw_end_object(&w);
    jw_array(&w, "methods");
    for (int k = 0; k < TXKIT_NMETHODS; k++) {
        jw_object(&w, NULL);
        jw_string(&w, "name", txkit_method_name(k));
        jw_bool(&w, "usable", k != TXKIT_HTM || r->usable);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_string(&w, "method", txkit_method_name(m));
    jw_bool(&w, "method_from_env", env && *env);
    jw_string(&w, "cm", txkit_get_cm());
    jw_bool(&w, "cm_from_env", cm_env && *cm_env);
    jw_bool(&w, "sched", sched);
    jw_i64(&w, "priority", tx_get_priority());
    jw_end_object(&w);
    fputc('\n', stdout);
}

static int cmd_info(int argc, char **argv) {
    int json = 0;
    int rc = simple_opts(argc, argv, "info", info_usage, &json, 0);
    if (rc >= 0)
        return rc;
    struct txkit_rtm_info r;
    char model[128];
    txkit_rtm_info(&r);
    cpu_model(model, sizeof model);
    txkit_method_t m = txkit_get_method();
    const char *env = getenv("TXKIT_METHOD");
    const char *cm_env = getenv("TXKIT_CM");
    int cpus = cpus_available();
    int sched = txkit_set_sched(0);
    txkit_set_sched(sched);
    if (json) {
        info_json(&r, model, m, env, cm_env, sched, cpus);
        return 0;
    }

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
        printf("  probe:        not run (%s)\n", r.cpuid_rtm && !r.rtm_always_abort
                                                     ? "TXKIT_RTM=off"
                                                     : "CPUID does not allow XBEGIN");
    printf("methods:        auto, %s, stm, serial\n", r.usable ? "htm" : "htm (not usable here)");
    printf("method:         %s%s\n", txkit_method_name(m),
           env && *env ? " (from TXKIT_METHOD)" : " (default)");
    if (m == TXKIT_AUTO)
        printf("  order:        %s\n",
               r.usable ? "htm -> stm -> serial (serial while one thread runs alone)"
                        : "stm -> serial (serial while one thread runs alone; no RTM)");
    printf("contention:     %s%s\n", txkit_get_cm(),
           cm_env && *cm_env ? " (from TXKIT_CM)" : " (default)");
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

/* txkit run --report's CMD while it runs: a termination signal sent to txkit
 * alone (a supervisor's SIGTERM, a closed terminal's SIGHUP) goes on to it,
 * which would otherwise live on without its parent. */
static volatile sig_atomic_t report_child;
static void forward_signal(int sig) {
    if (report_child > 0)
        kill((pid_t)report_child, sig);
}

/* execvp(cmd) failed (errno): say why, and the shell's status: 127 when
 * there is no such command, 126 when it cannot be run. A script whose
 * interpreter is missing fails with ENOENT too, though the file is there:
 * that one is "bad interpreter", 126, as the shell says. */
static int exec_failed(const char *cmd) {
    int e = errno;
    if (e == ENOENT && strchr(cmd, '/') && access(cmd, F_OK) == 0) {
        fprintf(stderr,
                "txkit run: %s: bad interpreter (the program its #! line or ELF header names is "
                "missing)\n",
                cmd);
        return 126;
    }
    fprintf(stderr, "txkit run: %s: %s\n", cmd, strerror(e));
    return e == ENOENT ? 127 : 126;
}

/* txkit run --report: CMD in a child with TXKIT_LOCK_REPORT set, then the
 * report of every process it left; CMD's exit status, or CMD's death: a CMD
 * killed by a signal kills txkit with the same signal once the report is out
 * (its caller sees what it would have seen without --report). */
static int run_with_report(char **cmd, const char *report, const char *csv_path) {
    FILE *out = stderr, *csv = NULL;
    if (strcmp(report, "-") != 0 && !(out = fopen(report, "w"))) {
        fprintf(stderr, "txkit run: --report=%s: %s\n", report, strerror(errno));
        return 1;
    }
    if (csv_path) {
        if (!(csv = fopen(csv_path, "w"))) {
            fprintf(stderr, "txkit run: --report-csv=%s: %s\n", csv_path, strerror(errno));
            return 1;
        }
        fprintf(csv, "%s\n", LOCKREPORT_CSV_HEADER);
    }
    char dir[] = "/tmp/txkit-report.XXXXXX", prefix[64];
    if (!mkdtemp(dir)) {
        perror("txkit run: --report: mkdtemp");
        return 1;
    }
    /* the program's processes may run as other users (a server's children as
     * www-data): they must be able to create their files; sticky, like /tmp */
    chmod(dir, 01777);
    snprintf(prefix, sizeof prefix, "%s/locks", dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("txkit run: fork");
        return 1;
    }
    if (pid == 0) {
        setenv("TXKIT_LOCK_REPORT", prefix, 1);
        execvp(cmd[0], cmd);
        _exit(exec_failed(cmd[0]));
    }
    /* ^C and ^\ are for CMD (the terminal sends them to both); the report
     * comes after it ends */
    unsetenv("LD_PRELOAD"); /* the symbolizer's helpers (addr2line) are not CMD */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    report_child = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    report_child = 0;
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (!(WIFEXITED(st) && (rc == 126 || rc == 127)))
        lockreport_print(prefix, cmd[0], out, csv);
    rmdir(dir);
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "txkit run: --report-csv=%s: %s\n", csv_path, strerror(errno));
        rc = rc ? rc : 1;
    }
    if (out != stderr && fclose(out) != 0) {
        fprintf(stderr, "txkit run: --report=%s: %s\n", report, strerror(errno));
        return rc ? rc : 1;
    }
    if (WIFSIGNALED(st)) { /* die as CMD did (no core of txkit's own) */
        int sig = WTERMSIG(st);
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        fflush(NULL);
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(sig);
    }
    return rc;
}

static int cmd_run(int argc, char **argv) {
    static const struct option opts[] = {{"method", required_argument, NULL, 'm'},
                                         {"stats", optional_argument, NULL, 's'},
                                         {"no-elide", no_argument, NULL, 'E'},
                                         {"report", optional_argument, NULL, 'r'},
                                         {"report-csv", required_argument, NULL, 'C'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *method = NULL, *stats = NULL, *report = NULL, *report_csv = NULL;
    char stats_file[PATH_MAX + 2];
    int elide = 1;
    opterr = 0;
    optind = 1;
    int c;
    /* '+': options end at CMD, whose own options are its business. */
    while ((c = getopt_long(argc, argv, "+:m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            method = optarg;
            break;
        case 's':
            if (!optarg) {
                stats = "1";
                break;
            }
            stats = optarg; /* a file: TXKIT_STATS takes one with a '/' */
            if (!*stats)
                return cli_usage_error("run", "--stats=: no file name");
            if (!strchr(stats, '/')) {
                snprintf(stats_file, sizeof stats_file, "./%s", stats);
                stats = stats_file;
            }
            break;
        case 'E':
            elide = 0;
            break;
        case 'C':
            report_csv = optarg;
            if (!report)
                report = "-";
            break;
        case 'r':
            report = optarg ? optarg : "-";
            if (!*report)
                return cli_usage_error("run", "--report=: no file name");
            break;
        case 'h':
            run_usage(stdout);
            return 0;
        default:
            return cli_option_error("run", argv, c);
        }
    }
    int i = optind;
    if (i >= argc)
        return cli_usage_error("run", "no command given");
    if (report && !elide)
        return cli_usage_error("run", "--report needs the preload library: drop --no-elide");
    txkit_method_t m;
    if (method && txkit_method_parse(method, &m) != 0)
        return cli_usage_error("run", "--method %s: unknown method (auto, htm, stm, serial)",
                               method);
    if (method && m == TXKIT_HTM && !txkit_htm_usable()) {
        struct txkit_rtm_info r;
        txkit_rtm_info(&r);
        fprintf(stderr, "txkit run: --method htm: RTM is not usable here (%s)\n", r.reason);
        return 1;
    }
    char dir[PATH_MAX];
    if (dropin_dir(dir, sizeof dir) != 0) {
        fprintf(stderr,
                "txkit run: the libitm drop-in (lib/txkit/libitm.so.1) is not installed next to "
                "this txkit\n");
        return 1;
    }
    const char *old = getenv("LD_LIBRARY_PATH");
    size_t need = strlen(dir) + (old ? strlen(old) + 1 : 0) + 1;
    char *path = malloc(need);
    if (!path) {
        perror("txkit run");
        return 1;
    }
    snprintf(path, need, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_LIBRARY_PATH", path, 1);
    free(path);
    if (elide) {
        char lib[PATH_MAX];
        if (preload_lib(dir, lib, sizeof lib) != 0)
            fprintf(stderr,
                    "txkit run: libtxkit-preload.so is not installed next to %s: "
                    "mutexes are not elided\n",
                    dir);
        else if (add_preload(lib) != 0) {
            perror("txkit run");
            return 1;
        }
    }
    /* A lazy PLT slot resolved inside a hardware transaction aborts it every
     * time: bind everything at load. */
    setenv("LD_BIND_NOW", "1", 0);
    if (method)
        setenv("TXKIT_METHOD", method, 1);
    if (stats)
        setenv("TXKIT_STATS", stats, 1);
    if (report)
        return run_with_report(argv + i, report, report_csv);
    execvp(argv[i], argv + i);
    return exec_failed(argv[i]);
}

struct command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command's name */
    void (*help)(FILE *f);
};

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
    {"info", cmd_info, info_usage},          {"run", cmd_run, run_usage},
    {"stat", cmd_stat, stat_usage},          {"report", cmd_report, report_usage},
    {"version", cmd_version, version_usage}, {"help", cmd_help, help_usage},
};

static const struct command *find_command(const char *name) {
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(commands[k].name, name) == 0)
            return &commands[k];
    return NULL;
}

static int cmd_version(int argc, char **argv) {
    int rc = simple_opts(argc, argv, "version", version_usage, NULL, 0);
    if (rc >= 0)
        return rc;
    printf("txkit %s\n", txkit_version());
    return 0;
}

static int cmd_help(int argc, char **argv) {
    int rc = simple_opts(argc, argv, "help", help_usage, NULL, 1);
    if (rc >= 0)
        return rc;
    if (optind == argc) {
        usage(stdout);
        return 0;
    }
    const struct command *c = find_command(argv[optind]);
    if (!c)
        return cli_usage_error("help", "unknown command '%s'", argv[optind]);
    c->help(stdout);
    return 0;
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    opterr = 0;
    int c;
    /* '+': the global options come before COMMAND; the rest is the command's. */
    while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (c == 'V')
            return cmd_version(1, argv);
        return cli_option_error(NULL, argv, c);
    }
    if (optind >= argc) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const struct command *cmd = find_command(argv[optind]);
    if (!cmd)
        return cli_usage_error(NULL, "unknown command '%s'", argv[optind]);
    return cmd->run(argc - optind, argv + optind);
}
