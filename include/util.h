#ifndef UTIL_H
#define UTIL_H

/* Marks a function that the shared library exports. */
#define WLA_EXPORT __attribute__((visibility("default")))

#define WLA_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
