/* SPDX-License-Identifier: MIT */
/* A program built against an installed txkit, as a user would build it. */
#include <stdio.h>
#include <txkit.h>

static long counter;

int main(void) {
    TX_ATOMIC {
        TX_STORE(&counter, TX_LOAD(&counter) + 41);
    }
    TX_ATOMIC {
        TX_STORE(&counter, TX_LOAD(&counter) + 1);
    }
    if (counter != 42) {
        fprintf(stderr, "consumer: counter %ld, expected 42\n", counter);
        return 1;
    }
    printf("consumer ok: txkit %s\n", txkit_version());
    return 0;
}
