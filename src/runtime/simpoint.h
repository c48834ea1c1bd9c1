/* SPDX-License-Identifier: MIT */
/* simpoint.h - named points where a test build stalls a thread on request.
 *
 * Some races need one thread to be slow at one exact place (preempted, say)
 * while another runs ahead. In a -DTXKIT_SIM_RTM=ON build (tests only, never
 * installed) TK_SIM_POINT(name) sleeps when a test armed that point with
 * txkit_sim_stall(); in every other build it compiles to nothing. */
#ifndef TK_RUNTIME_SIMPOINT_H
#define TK_RUNTIME_SIMPOINT_H

#ifdef TXKIT_SIM_RTM
/* Sleeps if `name` is armed (one-shot); any thread, lock-free when not armed. */
__attribute__((visibility("hidden"))) void tk_sim_point(const char *name);
#define TK_SIM_POINT(name) tk_sim_point(name)
#else
#define TK_SIM_POINT(name) ((void)0)
#endif

#endif
