/* llmload.client._ssedecode: the compiled SSE decoder (the hot path of client/builder.py).

How it works: `bind(cls, line_fields, malformed)` returns a method for `cls` (StreamBuilder)
that does what StreamBuilder.feed_pure does for one read's block of lines, in C:

    for each line of the block (split at \n):
        skip it unless it starts with "data:"; payload = the rest, ASCII whitespace stripped
        "[DONE]" -> saw_done, over; empty -> skip
        fields = fast_fields(payload), or line_fields(payload) (the pure path) when the fast
                 path cannot answer for sure
        fold the fields into the builder and its timing, as feed_pure does

The fast path first validates the whole payload as strict JSON (RFC 8259: the grammar,
UTF-8, no control characters in strings, depth <= MAX_DEPTH, integers of <= MAX_DIGITS
digits), then walks only the objects it needs (top level, choices[0], its delta, tool calls)
and builds Python strings only for the fields it folds: content, reasoning, finish_reason,
model, tool-call arguments or names. Anything it does not handle goes to the pure path,
which then decides (and raises MalformedChunk, with its own message): a payload that is not
valid strict JSON or not an object (NaN and Infinity included: Python's json takes them), a
key written with escapes, a non-null `error` or `usage`, a field of an unexpected type, a
lone surrogate escape, an event of another API (a top-level `type` or `delta`, as Anthropic's
Messages and OpenAI's Responses events have: whatever the pure path learns of them stays its own). Duplicate keys: the last one wins, as in a Python dict. So both paths
give the same result for every input; tests/unit/test_decoder.py compares them.

`consume(parse, body, resp, feed, pending, t, data)` is one read of a stream after its first token
(client/body_lines.py `pure_consumer`, in C): the HTTP parser de-chunks the read into the body buffer,
the complete lines at its head go to `feed` as one block. `fast_fields(payload)` (for the tests)
returns the fast path's 6-tuple or None when it would hand the payload to the pure path. `ABI` is
checked by client/decoder.py (a stale build is not used).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define ABI 2
#define MAX_DEPTH 64
#define MAX_DIGITS 1000 /* Python's json refuses integers of over 4300 digits (int_max_str_digits) */

typedef struct { const char *s, *e; char kind; } Span; /* kind 0 absent, 's' string (s..e inside the quotes),
                                                          'o' object, 'a' array, 'n' null, 'x' other */

static PyObject *g_line_fields, *g_malformed;
static PyObject *s_timing, *s_parts, *s_usage, *s_model, *s_finish, *s_saw_done, *s_error_event,
    *s_t_last, *s_text_times, *s_t_first_content, *s_t_first_reasoning, *s_read_time, *s_message_complete, *s_empty;

/* ---- strict JSON validation ---- */

static const char *ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    return v;
}

/* One UTF-8 sequence starting at p (a byte >= 0x80): its length, 0 when invalid (Python's strict decoder). */
static int utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    int n;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3;
    else if (c >= 0xF0 && c <= 0xF4) n = 4;
    else return 0;
    if (end - p < n) return 0;
    for (int i = 1; i < n; i++) if ((p[i] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
    if (c == 0xED && p[1] > 0x9F) return 0;  /* a surrogate */
    if (c == 0xF0 && p[1] < 0x90) return 0;  /* overlong */
    if (c == 0xF4 && p[1] > 0x8F) return 0;  /* beyond U+10FFFF */
    return n;
}

/* p just after the opening quote: the closing quote, NULL when invalid; *escaped set when a \ occurs. */
static unsigned char SPECIAL[256]; /* bytes a string scan must look at: '"', '\\', controls, non-ASCII */

static const char *string_end(const char *p, const char *end, int *escaped) {
    while (p < end) {
        while (p < end && !SPECIAL[(unsigned char)*p]) p++;
        if (p >= end) return NULL;
        unsigned char c = (unsigned char)*p;
        if (c == '"') return p;
        if (c == '\\') {
            if (end - p < 2) return NULL;
            *escaped = 1;
            char x = p[1];
            if (x == 'u') {
                if (end - p < 6 || hex4(p + 2) < 0) return NULL;
                p += 6;
            } else if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' || x == 't') {
                p += 2;
            } else return NULL;
        } else if (c < 0x20) return NULL;
        else if (c < 0x80) p++;
        else {
            int n = utf8_len((const unsigned char *)p, (const unsigned char *)end);
            if (!n) return NULL;
            p += n;
        }
    }
    return NULL;
}

static const char *digits(const char *p, const char *end) {
    while (p < end && *p >= '0' && *p <= '9') p++;
    return p;
}

static const char *number_end(const char *p, const char *end) {
    if (*p == '-') p++;
    if (p >= end) return NULL;
    const char *start = p;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') p = digits(p, end);
    else return NULL;
    if (p - start > MAX_DIGITS) return NULL;
    if (p < end && *p == '.') {
        const char *q = digits(p + 1, end);
        if (q == p + 1) return NULL;
        p = q;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        const char *q = digits(p, end);
        if (q == p) return NULL;
        p = q;
    }
    return p;
}

static const char *value_end(const char *p, const char *end, int depth);

static const char *container_end(const char *p, const char *end, int depth, char close) {
    if (depth > MAX_DEPTH) return NULL;
    p = ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    while (p < end) {
        if (close == '}') {
            int escaped = 0;
            if (*p != '"' || !(p = string_end(p + 1, end, &escaped))) return NULL;
            p = ws(p + 1, end);
            if (p >= end || *p != ':') return NULL;
            p = ws(p + 1, end);
        }
        if (!(p = value_end(p, end, depth + 1))) return NULL;
        p = ws(p, end);
        if (p >= end) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = ws(p + 1, end);
    }
    return NULL;
}

/* The end of the JSON value at p (no leading whitespace), NULL when it is not valid strict JSON. */
static const char *value_end(const char *p, const char *end, int depth) {
    if (p >= end) return NULL;
    switch (*p) {
    case '{': return container_end(p, end, depth, '}');
    case '[': return container_end(p, end, depth, ']');
    case '"': {
        int escaped = 0;
        const char *q = string_end(p + 1, end, &escaped);
        return q ? q + 1 : NULL;
    }
    case 't': return end - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
    case 'f': return end - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
    case 'n': return end - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
    default: return number_end(p, end);
    }
}

/* ---- walking validated JSON (no checks needed: value_end accepted it) ---- */

static unsigned char QUOTE_OR_ESCAPE[256];

/* p after the opening quote -> the closing one; *escaped set when the string holds a \\ */
static const char *skip_string(const char *p, int *escaped) {
    while (1) {
        while (!QUOTE_OR_ESCAPE[(unsigned char)*p]) p++;
        if (*p == '"') return p;
        *escaped = 1;
        p += 2;
    }
}

static const char *skip_value(const char *p, const char *end) {
    int escaped = 0;
    if (*p == '"') return skip_string(p + 1, &escaped) + 1;
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (;; p++) {
            char c = *p;
            if (c == '"') p = skip_string(p + 1, &escaped);
            else if (c == '{' || c == '[') depth++;
            else if ((c == '}' || c == ']') && --depth == 0) return p + 1;
        }
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
        p++;
    return p;
}

static Span span_of(const char *p, const char *vend) {
    Span sp = {p, vend, 'x'};
    if (*p == '"') { sp.s = p + 1; sp.e = vend - 1; sp.kind = 's'; }
    else if (*p == '{') sp.kind = 'o';
    else if (*p == '[') sp.kind = 'a';
    else if (*p == 'n') sp.kind = 'n';
    return sp;
}

typedef struct { const char *s; size_t n; } Key;
#define KEY(text) {text, sizeof(text) - 1}

/* The values of `keys` in the (valid) object at obj (last occurrence wins); -1 when a key has escapes. */
static int object_get(const char *obj, const char *end, const Key *keys, int n, Span *out) {
    for (int i = 0; i < n; i++) out[i].kind = 0;
    const char *p = ws(obj + 1, end);
    if (*p == '}') return 0;
    while (1) {
        int escaped = 0;
        const char *key = p + 1, *key_end = skip_string(key, &escaped);
        size_t len = (size_t)(key_end - key);
        if (escaped) return -1;
        p = ws(ws(key_end + 1, end) + 1, end);  /* past the ':' */
        const char *vend = skip_value(p, end);
        for (int i = 0; i < n; i++)
            if (keys[i].n == len && keys[i].s[0] == key[0] && !memcmp(keys[i].s, key, len)) out[i] = span_of(p, vend);
        p = ws(vend, end);
        if (*p == '}') return 0;
        p = ws(p + 1, end);
    }
}

/* A string span -> str; NULL without an exception set: hand the line to the pure path (a lone surrogate). */
static PyObject *make_str(Span sp) {
    Py_ssize_t len = sp.e - sp.s;
    if (!memchr(sp.s, '\\', (size_t)len)) {
        PyObject *text = PyUnicode_DecodeUTF8(sp.s, len, NULL);
        if (!text) PyErr_Clear();
        return text;
    }
    char stack[512], *buf = len <= (Py_ssize_t)sizeof(stack) ? stack : PyMem_Malloc((size_t)len);
    if (!buf) return NULL;
    char *o = buf;
    const char *p = sp.s;
    while (p < sp.e) {
        if (*p != '\\') { *o++ = *p++; continue; }
        char x = p[1];
        if (x != 'u') {
            *o++ = x == 'b' ? '\b' : x == 'f' ? '\f' : x == 'n' ? '\n' : x == 'r' ? '\r' : x == 't' ? '\t' : x;
            p += 2;
            continue;
        }
        long cp = hex4(p + 2);
        p += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) goto lone;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int low = (sp.e - p >= 6 && p[0] == '\\' && p[1] == 'u') ? hex4(p + 2) : -1;
            if (low < 0xDC00 || low > 0xDFFF) goto lone;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            p += 6;
        }
        if (cp < 0x80) *o++ = (char)cp;
        else if (cp < 0x800) { *o++ = (char)(0xC0 | (cp >> 6)); *o++ = (char)(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) {
            *o++ = (char)(0xE0 | (cp >> 12)); *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
            *o++ = (char)(0x80 | (cp & 0x3F));
        } else {
            *o++ = (char)(0xF0 | (cp >> 18)); *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
            *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F));
        }
    }
    PyObject *text = PyUnicode_DecodeUTF8(buf, o - buf, NULL);
    if (!text) PyErr_Clear();
    if (buf != stack) PyMem_Free(buf);
    return text;
lone:
    if (buf != stack) PyMem_Free(buf);
    return NULL;
}

/* "" for absent or null, the string, or NULL (pure path) for any other type or a lone surrogate. */
static PyObject *text_or_empty(Span sp) {
    if (sp.kind == 0 || sp.kind == 'n') return Py_NewRef(s_empty);
    return sp.kind == 's' ? make_str(sp) : NULL;
}

static const Key TOP_KEYS[] = {KEY("error"), KEY("usage"), KEY("model"), KEY("choices"), KEY("type"), KEY("delta")};
static const Key CHOICE_KEYS[] = {KEY("delta"), KEY("text"), KEY("finish_reason")};
static const Key DELTA_KEYS[] = {KEY("content"), KEY("reasoning_content"), KEY("reasoning"), KEY("tool_calls")};
static const Key CALL_KEYS[] = {KEY("function")};
static const Key FUNCTION_KEYS[] = {KEY("arguments"), KEY("name")};

/* tool_calls' text (client/sse.py tool_call_text): argument fragments joined, else the names; NULL: pure path. */
static PyObject *tool_call_text(Span calls, const char *end) {
    PyObject *args = PyList_New(0), *names = PyList_New(0), *text = NULL;
    if (!args || !names) goto done;
    const char *p = ws(calls.s + 1, end);
    while (*p != ']') {
        const char *vend = skip_value(p, end);
        Span call, fn[2];
        if (*p == '{') {
            if (object_get(p, end, CALL_KEYS, 1, &call) < 0) goto done;
            if (call.kind == 'o') {
                if (object_get(call.s, end, FUNCTION_KEYS, 2, fn) < 0) goto done;
                PyObject *a = text_or_empty(fn[0]), *nm = a ? text_or_empty(fn[1]) : NULL;
                int bad = !a || !nm || PyList_Append(args, a) < 0 || PyList_Append(names, nm) < 0;
                Py_XDECREF(a);
                Py_XDECREF(nm);
                if (bad) goto done;
            }
        }
        p = ws(vend, end);
        if (*p == ',') p = ws(p + 1, end);
    }
    text = PyUnicode_Join(s_empty, args);
    if (text && PyUnicode_GET_LENGTH(text) == 0) Py_SETREF(text, PyUnicode_Join(s_empty, names));
done:
    Py_XDECREF(args);
    Py_XDECREF(names);
    if (!text) PyErr_Clear();
    return text;
}

typedef struct { PyObject *content, *reasoning, *finish, *model; } Fields; /* usage and error: None */

static void fields_clear(Fields *f) {
    Py_CLEAR(f->content);
    Py_CLEAR(f->reasoning);
    Py_CLEAR(f->finish);
    Py_CLEAR(f->model);
}

/* choices[0]'s delta (or text) and finish_reason into f; 0: the pure path decides. */
static int choice_fields(Span choices, const char *end, Fields *f) {
    const char *p = ws(choices.s + 1, end);
    Span choice[3], delta[4];
    if (*p == ']') goto no_choice;
    if (*p != '{' || object_get(p, end, CHOICE_KEYS, 3, choice) < 0) return 0;
    if (choice[2].kind == 's') {
        if (!(f->finish = make_str(choice[2]))) return 0;
    } else if (choice[2].kind != 0 && choice[2].kind != 'n') return 0;
    if (choice[0].kind != 'o') {
        f->reasoning = Py_NewRef(s_empty);
        return (f->content = text_or_empty(choice[1])) != NULL;
    }
    if (object_get(choice[0].s, end, DELTA_KEYS, 4, delta) < 0) return 0;
    if (!(f->content = text_or_empty(delta[0])) || !(f->reasoning = text_or_empty(delta[1]))) return 0;
    if (PyUnicode_GET_LENGTH(f->reasoning) == 0) {  /* reasoning_content or reasoning */
        Py_DECREF(f->reasoning);
        if (!(f->reasoning = text_or_empty(delta[2]))) return 0;
    }
    if (PyUnicode_GET_LENGTH(f->content) || PyUnicode_GET_LENGTH(f->reasoning) || delta[3].kind == 0 ||
        delta[3].kind == 'n')
        return 1;
    if (delta[3].kind != 'a') return 0;
    Py_SETREF(f->content, tool_call_text(delta[3], end));
    return f->content != NULL;
no_choice:
    f->content = Py_NewRef(s_empty);
    f->reasoning = Py_NewRef(s_empty);
    return 1;
}

/* The fields of one payload, or 0 (nothing built) when the pure path must decide. */
static int fast_fields(const char *p, const char *end, Fields *f, int want_model) {
    Span top[6];
    memset(f, 0, sizeof(*f));
    if (p >= end || *p != '{') return 0;
    const char *vend = value_end(p, end, 0);
    if (!vend || ws(vend, end) != end || object_get(p, end, TOP_KEYS, 6, top) < 0) return 0;
    for (int i = 0; i < 2; i++)  /* error, usage: null or absent (else the pure path) */
        if (top[i].kind != 0 && top[i].kind != 'n') return 0;
    if (top[4].kind || top[5].kind) return 0;  /* another API's event (Anthropic, Responses): the pure path's */
    if (top[2].kind == 's') {
        if (want_model && !(f->model = make_str(top[2]))) return 0;
    } else if (top[2].kind != 0 && top[2].kind != 'n') return 0;
    if (top[3].kind == 'a') {
        if (!choice_fields(top[3], end, f)) goto pure;
    } else if (top[3].kind == 0 || top[3].kind == 'n') {
        f->content = Py_NewRef(s_empty);
        f->reasoning = Py_NewRef(s_empty);
    } else goto pure;
    return 1;
pure:
    fields_clear(f);
    return 0;
}

/* ---- folding a chunk into the builder (StreamBuilder.feed_pure's body) ---- */

typedef struct {
    PyObject *builder, *timing, *parts, *text_times, *t;
    int model_set, first_content_set, first_reasoning_set;
} Fold;

static int truth(PyObject *o) { return o == Py_None ? 0 : PyObject_IsTrue(o); }

/* 1: the stream is over (an error event), 0: go on, -1: an exception. */
static int fold(Fold *s, PyObject *content, PyObject *reasoning, PyObject *finish, PyObject *usage,
                PyObject *model, PyObject *error) {
    if (error != Py_None) return PyObject_SetAttr(s->builder, s_error_event, error) < 0 ? -1 : 1;
    if (PyObject_SetAttr(s->timing, s_t_last, s->t) < 0) return -1;
    int c = truth(content), r = c < 0 ? -1 : truth(reasoning);
    if (r < 0) return -1;
    if (c || r) {
        if (PyList_Append(s->text_times, s->t) < 0) return -1;
        if (c) {
            if (PyList_Append(s->parts, content) < 0) return -1;
            if (!s->first_content_set) {
                if (PyObject_SetAttr(s->timing, s_t_first_content, s->t) < 0) return -1;
                s->first_content_set = 1;
            }
        }
        if (r) {
            if (PyList_Append(s->parts, reasoning) < 0) return -1;
            if (!s->first_reasoning_set) {
                if (PyObject_SetAttr(s->timing, s_t_first_reasoning, s->t) < 0) return -1;
                s->first_reasoning_set = 1;
            }
        }
    }
    int u = truth(usage);
    if (u < 0 || (u && PyObject_SetAttr(s->builder, s_usage, usage) < 0)) return -1;
    if (!s->model_set) {
        int m = truth(model);
        if (m < 0 || (m && PyObject_SetAttr(s->builder, s_model, model) < 0)) return -1;
        s->model_set = m;
    }
    int fr = truth(finish);
    if (fr < 0 || (fr && PyObject_SetAttr(s->builder, s_finish, finish) < 0)) return -1;
    return 0;
}

/* One data payload through the pure path (client/sse.py), MalformedChunk dated at the read. */
static int fold_pure(Fold *s, const char *p, const char *end) {
    PyObject *payload = PyBytes_FromStringAndSize(p, end - p);
    if (!payload) return -1;
    PyObject *tup = PyObject_CallOneArg(g_line_fields, payload);
    Py_DECREF(payload);
    if (!tup) {
        if (PyErr_ExceptionMatches(g_malformed)) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (value && PyObject_SetAttr(value, s_read_time, s->t) < 0) PyErr_Clear();
            PyErr_Restore(type, value, tb);
        }
        return -1;
    }
    if (!PyTuple_Check(tup) || PyTuple_GET_SIZE(tup) != 6) {
        Py_DECREF(tup);
        PyErr_SetString(PyExc_TypeError, "line_fields must return a 6-tuple");
        return -1;
    }
    PyObject **v = &PyTuple_GET_ITEM(tup, 0);
    int over = fold(s, v[0], v[1], v[2], v[3], v[4], v[5]);
    Py_DECREF(tup);
    return over;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c'; }

static int fold_lines(Fold *s, const char *p, const char *end) {
    while (1) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
        if (le - p >= 5 && !memcmp(p, "data:", 5)) {
            const char *a = p + 5, *b = le;
            while (a < b && is_space(*a)) a++;
            while (b > a && is_space(b[-1])) b--;
            if (b - a == 6 && !memcmp(a, "[DONE]", 6))
                return PyObject_SetAttr(s->builder, s_saw_done, Py_True) < 0 ? -1 : 1;
            if (b > a) {
                Fields f;
                int over;
                if (fast_fields(a, b, &f, !s->model_set)) {
                    over = fold(s, f.content, f.reasoning, f.finish ? f.finish : Py_None, Py_None,
                                f.model ? f.model : Py_None, Py_None);
                    fields_clear(&f);
                } else over = fold_pure(s, a, b);
                if (over) return over;
            }
        }
        if (!nl) return 0;
        p = nl + 1;
    }
}

static PyObject *feed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "feed(t, lines) takes 2 arguments");
        return NULL;
    }
    PyObject *lines = PyBytes_Check(args[1]) ? Py_NewRef(args[1]) : PyBytes_FromObject(args[1]);
    if (!lines) return NULL;
    Fold s = {self, NULL, NULL, NULL, args[0], 0, 0, 0};
    PyObject *model = NULL, *first_c = NULL, *first_r = NULL, *result = NULL;
    int over = -1;
    if (!(s.timing = PyObject_GetAttr(self, s_timing)) || !(s.parts = PyObject_GetAttr(self, s_parts)) ||
        !(s.text_times = PyObject_GetAttr(s.timing, s_text_times)) || !(model = PyObject_GetAttr(self, s_model)) ||
        !(first_c = PyObject_GetAttr(s.timing, s_t_first_content)) ||
        !(first_r = PyObject_GetAttr(s.timing, s_t_first_reasoning)))
        goto done;
    if (!PyList_Check(s.parts) || !PyList_Check(s.text_times)) {
        PyErr_SetString(PyExc_TypeError, "parts and text_times must be lists");
        goto done;
    }
    if ((s.model_set = truth(model)) < 0) goto done;
    s.first_content_set = first_c != Py_None;
    s.first_reasoning_set = first_r != Py_None;
    over = fold_lines(&s, PyBytes_AS_STRING(lines), PyBytes_AS_STRING(lines) + PyBytes_GET_SIZE(lines));
    if (over >= 0) result = Py_NewRef(over ? Py_True : Py_False);
done:
    Py_DECREF(lines);
    Py_XDECREF(s.timing);
    Py_XDECREF(s.parts);
    Py_XDECREF(s.text_times);
    Py_XDECREF(model);
    Py_XDECREF(first_c);
    Py_XDECREF(first_r);
    return result;
}

static PyMethodDef FEED_DEF = {"feed", (PyCFunction)(void (*)(void))feed, METH_FASTCALL,
                               "feed(t, lines) -> bool: one read's SSE lines (the compiled StreamBuilder.feed)"};


/* ---- one read of a stream (client/body_lines.py pure_consumer, in C) ---- */

/* The complete lines at the head of the body buffer -> pending, stamped t (body_lines.take_lines). */
static int take_lines(PyObject *body, PyObject *t, PyObject *pending) {
    const char *buf = PyByteArray_AS_STRING(body);
    Py_ssize_t size = PyByteArray_GET_SIZE(body), end = size;
    while (end > 0 && buf[end - 1] != '\n') end--;
    if (!end) return 0;
    PyObject *block = PyBytes_FromStringAndSize(buf, end), *item = block ? PyTuple_Pack(2, t, block) : NULL;
    Py_XDECREF(block);
    int bad = !item || PyList_Append(pending, item) < 0 || PySequence_DelSlice(body, 0, end) < 0;
    Py_XDECREF(item);
    return bad ? -1 : 0;
}

static PyObject *consume(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7 || !PyByteArray_Check(args[1]) || !PyList_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "consume(parse, body: bytearray, resp, feed, pending: list, t, data)");
        return NULL;
    }
    PyObject *parse = args[0], *body = args[1], *resp = args[2], *feed = args[3], *pending = args[4], *t = args[5],
             *data = args[6];
    PyObject *parsed = PyObject_CallOneArg(parse, data);
    if (!parsed) {  /* the lines de-chunked before the error go to pending, for the attempt to decode */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (take_lines(body, t, pending) < 0) PyErr_Clear();
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    Py_DECREF(parsed);
    const char *buf = PyByteArray_AS_STRING(body);
    Py_ssize_t size = PyByteArray_GET_SIZE(body), end = size;
    while (end > 0 && buf[end - 1] != '\n') end--;
    if (end) {
        PyObject *block = PyBytes_FromStringAndSize(buf, end);
        if (!block) return NULL;
        if ((end == size ? PyByteArray_Resize(body, 0) : PySequence_DelSlice(body, 0, end)) < 0) {
            Py_DECREF(block);
            return NULL;
        }
        PyObject *argv[2] = {t, block}, *over = PyObject_Vectorcall(feed, argv, 2, NULL);
        Py_DECREF(block);
        if (!over) return NULL;
        int done = PyObject_IsTrue(over);
        Py_DECREF(over);
        if (done < 0) return NULL;
        if (done) Py_RETURN_TRUE;
    }
    Py_ssize_t n = PyObject_Length(data);
    if (n < 0) return NULL;
    if (n == 0) Py_RETURN_TRUE;
    PyObject *complete = PyObject_GetAttr(resp, s_message_complete);
    if (!complete) return NULL;
    int c = PyObject_IsTrue(complete);
    Py_DECREF(complete);
    if (c < 0) return NULL;
    return Py_NewRef(c ? Py_True : Py_False);
}

static PyObject *bind(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *cls, *line_fields, *malformed;
    if (!PyArg_ParseTuple(args, "O!OO!:bind", &PyType_Type, &cls, &line_fields, &PyType_Type, &malformed))
        return NULL;
    Py_XSETREF(g_line_fields, Py_NewRef(line_fields));
    Py_XSETREF(g_malformed, Py_NewRef(malformed));
    return PyDescr_NewMethod((PyTypeObject *)cls, &FEED_DEF);
}

static PyObject *fast_fields_py(PyObject *module, PyObject *payload) {
    (void)module;
    if (!PyBytes_Check(payload)) {
        PyErr_SetString(PyExc_TypeError, "payload must be bytes");
        return NULL;
    }
    Fields f;
    const char *p = PyBytes_AS_STRING(payload);
    if (!fast_fields(p, p + PyBytes_GET_SIZE(payload), &f, 1)) Py_RETURN_NONE;
    PyObject *tup = PyTuple_Pack(6, f.content, f.reasoning, f.finish ? f.finish : Py_None, Py_None,
                                 f.model ? f.model : Py_None, Py_None);
    fields_clear(&f);
    return tup;
}

static PyMethodDef METHODS[] = {
    {"bind", bind, METH_VARARGS,
     "bind(cls, line_fields, malformed) -> the compiled feed method for cls (line_fields: the pure path)"},
    {"consume", (PyCFunction)(void (*)(void))consume, METH_FASTCALL,
     "consume(parse, body, resp, feed, pending, t, data) -> bool: one read of a stream (body_lines.pure_consumer)"},
    {"fast_fields", fast_fields_py, METH_O,
     "fast_fields(payload) -> (content, reasoning, finish_reason, usage, model, error), or None: the pure path"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, .m_name = "_ssedecode",
                                    .m_doc = "The compiled SSE decoder (see the top of _ssedecode.c).",
                                    .m_size = -1, .m_methods = METHODS};

PyMODINIT_FUNC PyInit__ssedecode(void) {
    static const char *names[] = {"timing", "parts", "usage", "model", "finish_reason", "saw_done", "error_event",
                                  "t_last", "text_times", "t_first_content", "t_first_reasoning", "read_time_s",
                                  "message_complete", ""};
    PyObject **slots[] = {&s_timing, &s_parts, &s_usage, &s_model, &s_finish, &s_saw_done, &s_error_event,
                          &s_t_last, &s_text_times, &s_t_first_content, &s_t_first_reasoning, &s_read_time,
                          &s_message_complete, &s_empty};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!*slots[i] && !(*slots[i] = PyUnicode_InternFromString(names[i]))) return NULL;
    for (int c = 0; c < 256; c++) {
        SPECIAL[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
        QUOTE_OR_ESCAPE[c] = c == '"' || c == '\\';
    }
    PyObject *module = PyModule_Create(&MODULE);
    if (module && PyModule_AddIntConstant(module, "ABI", ABI) < 0) Py_CLEAR(module);
    return module;
}
