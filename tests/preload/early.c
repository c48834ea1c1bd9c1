/* SPDX-License-Identifier: MIT */
/* early.c - libearly.so: preloaded after libtxkit-preload.so, it brings in
 * libearly_dep.so (early_dep.c), whose constructor locks a mutex before
 * libtxkit's constructors run (preload.early_ctor). */
int early_dep_linked(void);
int early_linked(void) { return early_dep_linked(); }
