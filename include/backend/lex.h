/*
 * The lexer that the configuration (backend/config.c) and the panel
 * configuration (backend/panel/config.c) share: what a blank, a digit and a
 * name character are, and how a decimal number is read, so that a value
 * means the same wherever it is written.
 */
#ifndef BACKEND_LEX_H
#define BACKEND_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool wla_lex_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool wla_lex_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static inline bool wla_lex_name_char(char c)
{
	return wla_lex_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		c == '_' || c == '-';
}

/* At least one character, all of them digits. */
static inline bool wla_lex_all_digits(const char *s, size_t len)
{
	if (len == 0) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		if (!wla_lex_digit(s[i])) {
			return false;
		}
	}
	return true;
}

/*
 * Reads an optional '-' and at least one digit at *p (advanced past them).
 * The magnitude saturates at limit + 1, so a value too long for any integer
 * type reads as out of range instead of wrapping.
 */
static inline bool wla_lex_number(const char **p, int64_t limit, int64_t *value)
{
	const char *s = *p;
	bool negative = *s == '-';
	if (negative) {
		s++;
	}
	if (!wla_lex_digit(*s)) {
		return false;
	}
	int64_t v = 0;
	for (; wla_lex_digit(*s); s++) {
		if (v <= limit) {
			v = v * 10 + (*s - '0');
		}
	}
	if (v > limit) {
		v = limit + 1;
	}
	*value = negative ? -v : v;
	*p = s;
	return true;
}

/* The len characters at s are a plain unsigned decimal (no sign, no blanks,
 * nothing else) of at most max. */
static inline bool wla_lex_uint(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	if (!wla_lex_all_digits(s, len)) {
		return false;
	}
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (v <= max) {
			v = v * 10 + (uint64_t)(s[i] - '0');
		}
	}
	if (v > max) {
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

#endif
