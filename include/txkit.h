/* SPDX-License-Identifier: MIT */
/* txkit.h - umbrella header: everything a C program needs from txkit. */
#ifndef TXKIT_H
#define TXKIT_H

#include <txkit/config.h>
#include <txkit/tx.h>
#include <txkit/stats.h>
#include <txkit/cx.h>
#include <txkit/cm.h>

#endif /* TXKIT_H */
