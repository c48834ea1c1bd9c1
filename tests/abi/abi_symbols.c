/* SPDX-License-Identifier: MIT */
/* abi_symbols.c - does a library export the whole libitm ABI, each symbol
 * with libitm's version node?
 *
 * usage: abi_symbols [--skip-if-missing] LIBRARY LIST [VERSIONS]
 *
 * LIST has one symbol a line ("#" comments and blank lines ignored),
 * optionally followed by its version node. A symbol without one takes it from
 * VERSIONS (same format), or else from the system libitm.so.1. For every
 * symbol, the library must define it with that version as the default version
 * (dlvsym with the node and plain dlsym agree). Where the system libitm is
 * present, the versions of the list are also checked against it.
 * --skip-if-missing: exit 77 (skipped) when LIST does not exist.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SKIP_CODE 77
#define MAX_SYMS 1024

struct sym {
    char name[128];
    char version[32];
};

static int read_list(const char *path, struct sym *out, int max) {
    FILE *f = fopen(path, "r");
    char line[512];
    int n = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        char name[128], version[32];
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        int k = sscanf(line, "%127s %31s", name, version);
        if (k < 1)
            continue;
        if (n == max) {
            fprintf(stderr, "%s: more than %d symbols\n", path, max);
            exit(2);
        }
        snprintf(out[n].name, sizeof out[n].name, "%s", name);
        snprintf(out[n].version, sizeof out[n].version, "%s", k == 2 ? version : "");
        n++;
    }
    fclose(f);
    return n;
}

/* Whether handle defines name with version node version (an absolute symbol
 * such as a version node's own name resolves to NULL without an error). */
static int has_version(void *handle, const char *name, const char *version, void **addr) {
    dlerror();
    void *p = dlvsym(handle, name, version);
    if (dlerror() != NULL)
        return 0;
    if (addr)
        *addr = p;
    return 1;
}

static const char *const nodes[] = {"LIBITM_1.0", "LIBITM_1.1"};

static const char *version_in(void *handle, const char *name) {
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        if (has_version(handle, name, nodes[i], NULL))
            return nodes[i];
    return NULL;
}

int main(int argc, char **argv) {
    int skip_if_missing = 0;
    int a = 1;
    if (a < argc && strcmp(argv[a], "--skip-if-missing") == 0) {
        skip_if_missing = 1;
        a++;
    }
    if (argc - a < 2 || argc - a > 3) {
        fprintf(stderr, "usage: %s [--skip-if-missing] LIBRARY LIST [VERSIONS]\n", argv[0]);
        return 2;
    }
    const char *lib = argv[a], *list = argv[a + 1], *versions = argc - a == 3 ? argv[a + 2] : NULL;

    if (access(list, R_OK) != 0) {
        if (skip_if_missing) {
            printf("SKIP abi_symbols: %s not found (the ABI list lives in shared/ beside the "
                   "repository checkout); tests/abi/libitm-abi-symbols.txt is checked by "
                   "abi.symbols instead\n",
                   list);
            return SKIP_CODE;
        }
        fprintf(stderr, "abi_symbols: cannot read %s\n", list);
        return 1;
    }

    static struct sym syms[MAX_SYMS], vers[MAX_SYMS];
    int n = read_list(list, syms, MAX_SYMS);
    int nv = versions ? read_list(versions, vers, MAX_SYMS) : 0;
    if (n <= 0 || nv < 0) {
        fprintf(stderr, "abi_symbols: no symbols in %s, or %s unreadable\n", list,
                versions ? versions : "-");
        return 1;
    }

    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "abi_symbols: dlopen %s: %s\n", lib, dlerror());
        return 1;
    }
    /* The system libitm, for versions the lists do not give and to check them. */
    void *itm = dlopen("libitm.so.1", RTLD_NOW | RTLD_LOCAL);
    if (itm && has_version(itm, "txkit_version", "TXKIT_0", NULL)) {
        dlclose(itm); /* LD_LIBRARY_PATH found a drop-in, not libitm */
        itm = NULL;
    }

    int bad = 0, n10 = 0, n11 = 0, itm_checked = 0;
    for (int i = 0; i < n; i++) {
        const char *name = syms[i].name;
        const char *want = syms[i].version[0] ? syms[i].version : NULL;
        for (int j = 0; !want && j < nv; j++)
            if (strcmp(vers[j].name, name) == 0 && vers[j].version[0])
                want = vers[j].version;
        const char *itm_version = itm ? version_in(itm, name) : NULL;
        if (!want)
            want = itm_version;
        if (!want) {
            fprintf(stderr,
                    "FAIL %s: no version node known (not in the lists, not in a "
                    "system libitm)\n",
                    name);
            bad++;
            continue;
        }
        if (itm) {
            if (!itm_version || strcmp(itm_version, want) != 0) {
                fprintf(stderr, "FAIL %s: the list says %s, the system libitm has %s\n", name, want,
                        itm_version ? itm_version : "no such symbol");
                bad++;
            }
            itm_checked++;
        }
        void *pv = NULL;
        if (!has_version(h, name, want, &pv)) {
            const char *other = version_in(h, name);
            fprintf(stderr, "FAIL %s: %s does not export it as %s@%s%s%s\n", name, lib, name, want,
                    other ? "; it has " : "", other ? other : "");
            bad++;
            continue;
        }
        /* the default version (name@@node), which unversioned links bind to */
        dlerror();
        void *pd = dlsym(h, name);
        if (dlerror() != NULL || pd != pv) {
            fprintf(stderr, "FAIL %s: %s@%s is not the default version in %s\n", name, name, want,
                    lib);
            bad++;
            continue;
        }
        if (strcmp(want, "LIBITM_1.1") == 0)
            n11++;
        else
            n10++;
    }
    printf("abi_symbols: %s: %d symbols from %s: %d LIBITM_1.0, %d LIBITM_1.1, %d wrong; "
           "%s\n",
           lib, n, list, n10, n11, bad,
           itm ? "versions checked against the system libitm" : "no system libitm to compare with");
    if (itm && itm_checked != n)
        bad++;
    printf("SUMMARY abi_symbols: symbols=%d missing_or_wrong=%d\n", n, bad);
    return bad ? 1 : 0;
}
