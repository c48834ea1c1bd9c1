/* SPDX-License-Identifier: MIT */
/* abi_clonelib.c - a -fgnu-tm shared library that abi_clone dlopens.
 *
 * Its transaction_safe and transaction_callable functions have clones listed
 * in the library's own .tm_clone_table, which crtbegin registers with
 * _ITM_registerTMCloneTable when the library is loaded and deregisters at
 * dlclose. abi_clone reaches them only through pointers from dlsym(), so the
 * runtime must find the clones in that second table.
 */
long clonelib_calls;

__attribute__((transaction_safe)) void clonelib_add(long *p, long d) {
    *p += d;
    clonelib_calls++;
}

__attribute__((transaction_callable)) long clonelib_scale(long *p, long k) {
    *p *= k;
    clonelib_calls++;
    return *p;
}

__attribute__((transaction_safe)) void clonelib_set(long *p, long x) {
    *p = x;
    clonelib_calls = clonelib_calls + 0; /* a read of the library's own data too */
}
