// The C interface of include/CSimdJSON.h over simdjson's DOM API. Each thread keeps one parser and
// one list of values, so a small document costs no allocation once the thread has parsed one.

#include "CSimdJSON.h"

#include <simdjson.h>
#include <vector>

namespace {

// Deeper documents go to the caller's other parser: Swift builds its values recursively.
constexpr size_t maximumDepth = 512;
// Past these, `msal_json_done` gives the memory back (a whole token cache is megabytes; a token
// response or an ID token a few kilobytes).
constexpr size_t keptParserCapacity = 1 << 20;
constexpr size_t keptValueCount = 1 << 15;

thread_local simdjson::dom::parser parser;
thread_local std::vector<msal_json_value> values;

bool appendNumber(double number) {
    msal_json_value value{};
    value.kind = MSAL_JSON_NUMBER;
    value.number = number;
    values.push_back(value);
    return true;
}

bool append(simdjson::dom::element element, size_t depth) {
    if (depth > maximumDepth) return false;
    msal_json_value value{};
    switch (element.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
        value.kind = MSAL_JSON_NULL;
        values.push_back(value);
        return true;
    case simdjson::dom::element_type::BOOL: {
        bool flag = false;
        if (element.get_bool().get(flag) != simdjson::SUCCESS) return false;
        value.kind = flag ? MSAL_JSON_TRUE : MSAL_JSON_FALSE;
        values.push_back(value);
        return true;
    }
    case simdjson::dom::element_type::INT64: {
        int64_t number = 0;
        return element.get_int64().get(number) == simdjson::SUCCESS && appendNumber(double(number));
    }
    case simdjson::dom::element_type::UINT64: {
        uint64_t number = 0;
        return element.get_uint64().get(number) == simdjson::SUCCESS && appendNumber(double(number));
    }
    case simdjson::dom::element_type::DOUBLE: {
        double number = 0;
        return element.get_double().get(number) == simdjson::SUCCESS && appendNumber(number);
    }
    case simdjson::dom::element_type::STRING: {
        std::string_view string;
        if (element.get_string().get(string) != simdjson::SUCCESS) return false;
        value.kind = MSAL_JSON_STRING;
        value.bytes = string.data();
        value.length = string.size();
        values.push_back(value);
        return true;
    }
    case simdjson::dom::element_type::ARRAY: {
        simdjson::dom::array array;
        if (element.get_array().get(array) != simdjson::SUCCESS) return false;
        size_t position = values.size();
        value.kind = MSAL_JSON_ARRAY;
        values.push_back(value);
        uint32_t count = 0;
        for (simdjson::dom::element item : array) {
            if (!append(item, depth + 1)) return false;
            count += 1;
        }
        values[position].count = count;
        values[position].length = values.size() - position - 1;
        return true;
    }
    case simdjson::dom::element_type::OBJECT: {
        simdjson::dom::object object;
        if (element.get_object().get(object) != simdjson::SUCCESS) return false;
        size_t position = values.size();
        value.kind = MSAL_JSON_OBJECT;
        values.push_back(value);
        uint32_t count = 0;
        for (simdjson::dom::key_value_pair member : object) {
            msal_json_value key{};
            key.kind = MSAL_JSON_STRING;
            key.bytes = member.key.data();
            key.length = member.key.size();
            values.push_back(key);
            if (!append(member.value, depth + 1)) return false;
            count += 1;
        }
        values[position].count = count;
        values[position].length = values.size() - position - 1;
        return true;
    }
    }
    return false;
}

}  // namespace

extern "C" long msal_json_parse(const char *data, size_t length, const msal_json_value **result) {
    try {
        values.clear();
        simdjson::dom::element root;
        // `true`: the text is copied into a padded buffer when it lacks simdjson's padding.
        if (parser.parse(data, length, true).get(root) != simdjson::SUCCESS) return -1;
        if (!append(root, 0)) return -1;
        *result = values.data();
        return long(values.size());
    } catch (...) {  // std::bad_alloc
        return -1;
    }
}

extern "C" void msal_json_done(void) {
    if (parser.capacity() > keptParserCapacity) parser = simdjson::dom::parser();
    if (values.capacity() > keptValueCount) std::vector<msal_json_value>().swap(values);
    else values.clear();
}
