// swift-msal's C interface to simdjson (Debian's libsimdjson-dev), a C++ library: a JSON document
// parsed into a flat list of values, in document order, that Swift turns into its own values.
#ifndef SWIFT_MSAL_CSIMDJSON_H
#define SWIFT_MSAL_CSIMDJSON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The kind of a `msal_json_value`.
enum {
    MSAL_JSON_NULL = 0,
    MSAL_JSON_FALSE = 1,
    MSAL_JSON_TRUE = 2,
    MSAL_JSON_NUMBER = 3,
    MSAL_JSON_STRING = 4,
    MSAL_JSON_ARRAY = 5,
    MSAL_JSON_OBJECT = 6,
};

/// One value of a parsed document. An array is followed by its `count` elements; an object by
/// its `count` members, each a key (a `MSAL_JSON_STRING`) then the member's value.
typedef struct msal_json_value {
    int32_t kind;
    /// The number of elements or members of an array or object.
    uint32_t count;
    /// A string's UTF-8 bytes, unescaped (not NUL-terminated; may contain NUL).
    const char *bytes;
    /// The number of bytes at `bytes`; for an array or object, the number of values that follow
    /// it and belong to it (its elements or members, with theirs), so a reader can step over it.
    size_t length;
    /// A number's value (an integer beyond 2^53 is rounded, as a double).
    double number;
} msal_json_value;

/// Parses `length` bytes of UTF-8 JSON text (RFC 8259; any value at the top level). On success,
/// sets `*values` to the document's values and returns how many there are (at least 1); the values
/// and their bytes belong to the calling thread and stay valid until `msal_json_done` or the next
/// parse on that thread. Returns -1 when simdjson does not take the text (not JSON, not UTF-8, a
/// byte order mark, an integer beyond 64 bits, nesting deeper than 512) or memory runs out.
long msal_json_parse(const char *data, size_t length, const msal_json_value **values);

/// Ends the use of the last parse's values on the calling thread, and frees the memory a large
/// document made the thread's parser keep.
void msal_json_done(void);

#ifdef __cplusplus
}
#endif

#endif
