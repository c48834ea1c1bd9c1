/* txkit - command-line front end. So far: `txkit info`. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <txkit.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: txkit COMMAND\n"
            "commands:\n"
            "  info       version, RTM support and why, default method, thread count\n"
            "  version    print the version\n"
            "  help       this text\n");
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
    printf("threads:        %d (CPUs this process may run on; benchmarks default to this)\n", cpus);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "info") == 0)
        return cmd_info();
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("txkit %s\n", txkit_version());
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "txkit: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
