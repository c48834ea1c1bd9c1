/* SPDX-License-Identifier: MIT */
/* table.c - the list of methods, written once. A new method is a file of its
 * own that defines a struct tk_method, and a row here. */
#include <string.h>

#include "methods/method.h"

extern const struct tk_method tk_method_htm TK_HIDDEN;
extern const struct tk_method tk_method_stm TK_HIDDEN;
extern const struct tk_method tk_method_serial TK_HIDDEN;
extern const struct tk_method tk_method_glock TK_HIDDEN;

const struct tk_method *const tk_method_table[TK_NMETHODS_ALL] = {
    [TXKIT_AUTO] = NULL,
    [TXKIT_HTM] = &tk_method_htm,
    [TXKIT_STM] = &tk_method_stm,
    [TXKIT_SERIAL] = &tk_method_serial,
    [TXKIT_NMETHODS] = &tk_method_glock, /* selected by name only (tests) */
};

const char *tk_method_name(int id) {
    if (id == TXKIT_AUTO)
        return "auto";
    return id > 0 && id < TK_NMETHODS_ALL ? tk_method_table[id]->name : NULL;
}

int tk_method_lookup(const char *name) {
    for (int i = 0; i < TK_NMETHODS_ALL; i++)
        if (strcmp(name, tk_method_name(i)) == 0)
            return i;
    return -1;
}

/* The public name of a public method (include/txkit/tx.h). */
const char *txkit_method_name(int m) {
    return m >= 0 && m < TXKIT_NMETHODS ? tk_method_name(m) : "?";
}

/* Each method's per-thread state (thread_init / thread_fini). */
static void methods_thread_init(tk_thread *t, int arg) {
    (void)arg;
    for (int i = 0; i < TK_NMETHODS_ALL; i++)
        if (tk_method_table[i] && tk_method_table[i]->thread_init)
            tk_method_table[i]->thread_init(t);
}

static void methods_thread_fini(tk_thread *t, int arg) {
    (void)arg;
    for (int i = 0; i < TK_NMETHODS_ALL; i++)
        if (tk_method_table[i] && tk_method_table[i]->thread_fini)
            tk_method_table[i]->thread_fini(t);
}

TK_CONSTRUCTOR static void methods_hooks(void) {
    tk_hook_add(TK_HOOK_THREAD_INIT, 10, methods_thread_init);
    tk_hook_add(TK_HOOK_THREAD_EXIT, TK_EXIT_ORDER_METHODS, methods_thread_fini);
}
