/* SPDX-License-Identifier: MIT */
/* txkit/config.h - version and export macros shared by every public header. */
#ifndef TXKIT_CONFIG_H
#define TXKIT_CONFIG_H

#define TXKIT_VERSION_MAJOR 0
#define TXKIT_VERSION_MINOR 1
#define TXKIT_VERSION_PATCH 0
#define TXKIT_VERSION_STRING "0.1.0"

/* Symbols are hidden by default inside the library; only TXKIT_API ones are
 * exported (the linker version script is the final word). */
#if defined(TXKIT_BUILDING_LIBRARY)
#define TXKIT_API __attribute__((visibility("default")))
#else
#define TXKIT_API
#endif

#ifdef __cplusplus
#define TXKIT_BEGIN_DECLS extern "C" {
#define TXKIT_END_DECLS }
#define TXKIT_NOEXCEPT noexcept
#else
#define TXKIT_BEGIN_DECLS
#define TXKIT_END_DECLS
#define TXKIT_NOEXCEPT
#endif

#ifdef __cplusplus
#define _TXKIT_STATIC_ASSERT(c, msg) static_assert(c, msg)
#else
#define _TXKIT_STATIC_ASSERT(c, msg) _Static_assert(c, msg)
#endif

#define TXKIT_LIKELY(x) __builtin_expect(!!(x), 1)
#define TXKIT_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif /* TXKIT_CONFIG_H */
