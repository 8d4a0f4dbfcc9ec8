/* Answers the nats-conformance adapter protocol (docs/adapter-protocol.md, version 2) with libnats,
 * Debian's build of the NATS C client (nats.c), through its public header nats.h only.
 *
 * The client checks a subject only when a connection is asked to use it: natsConnection_SubscribeSync
 * returns NATS_INVALID_SUBJECT for a subject it refuses before it sends SUB, natsConnection_Publish
 * for one it refuses before it sends PUB. Both need a connection, so the shim connects (once, on the
 * first question) to the nats-server at $NATS_URL, which the harness starts for it (`server` in
 * adapter.toml); a subject is valid when the call returns NATS_OK. A subscription is ended at once and
 * a message is sent empty. Any other status is an internal error.
 *
 * The C functions take NUL-terminated strings, so a subject holding U+0000 reaches them cut at it.
 * The rest of this file reads requests (a small JSON reader for the fields the protocol's
 * valid_subject needs; any other field is read and skipped) and writes answers in ASCII. */
#define _POSIX_C_SOURCE 200809L

#include <nats/nats.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE (1 << 20) /* a longer request line is answered bad-request and skipped */
#define MAX_DEPTH 512      /* deeper nesting is not JSON this reader takes */

#define PUBLISH "natsConnection_Publish"
#define SUBSCRIBE "natsConnection_SubscribeSync"

/* A string a request holds, decoded to UTF-8 (lone surrogate escapes as three bytes, like CESU-8). */
typedef struct {
    char *bytes;
    size_t length, capacity;
} text;

static void append(text *t, const char *bytes, size_t length) {
    if (t->length + length + 1 > t->capacity) {
        t->capacity = 2 * (t->length + length + 1);
        t->bytes = realloc(t->bytes, t->capacity);
        if (t->bytes == NULL) {
            fputs("libnats adapter: out of memory\n", stderr);
            exit(1);
        }
    }
    memcpy(t->bytes + t->length, bytes, length);
    t->length += length;
    t->bytes[t->length] = '\0';
}

static void append_code_point(text *t, unsigned long c) {
    char out[4];
    size_t n;
    if (c < 0x80) {
        out[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        n = 2;
    } else if (c < 0x10000) {
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        n = 3;
    } else {
        out[0] = (char)(0xf0 | (c >> 18));
        out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[3] = (char)(0x80 | (c & 0x3f));
        n = 4;
    }
    append(t, out, n);
}

/* The length of the UTF-8 sequence at s (at most `left` bytes), its code point in *c; 0 if invalid.
 * Surrogates pass when `surrogates` (the decoded escapes of append_code_point), not in input. */
static size_t utf8_at(const unsigned char *s, size_t left, unsigned long *c, bool surrogates) {
    size_t n, i;
    unsigned long min;
    if (s[0] < 0x80) {
        *c = s[0];
        return 1;
    } else if ((s[0] & 0xe0) == 0xc0) {
        n = 2, min = 0x80, *c = s[0] & 0x1f;
    } else if ((s[0] & 0xf0) == 0xe0) {
        n = 3, min = 0x800, *c = s[0] & 0x0f;
    } else if ((s[0] & 0xf8) == 0xf0) {
        n = 4, min = 0x10000, *c = s[0] & 0x07;
    } else {
        return 0;
    }
    if (n > left)
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        *c = (*c << 6) | (s[i] & 0x3f);
    }
    if (*c < min || *c > 0x10ffff || (!surrogates && *c >= 0xd800 && *c <= 0xdfff))
        return 0;
    return n;
}

/* A JSON reader over one line: each function consumes one item and returns false if it is not JSON. */
typedef struct {
    const char *at, *end;
    int depth;
} reader;

static void skip_space(reader *r) {
    while (r->at < r->end && (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r'))
        r->at++;
}

static bool hex4(reader *r, unsigned long *c) {
    int i;
    *c = 0;
    if (r->end - r->at < 4)
        return false;
    for (i = 0; i < 4; i++) {
        char h = *r->at++;
        *c <<= 4;
        if (h >= '0' && h <= '9')
            *c |= (unsigned long)(h - '0');
        else if (h >= 'a' && h <= 'f')
            *c |= (unsigned long)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F')
            *c |= (unsigned long)(h - 'A' + 10);
        else
            return false;
    }
    return true;
}

/* A string at r->at (its opening quote), decoded into `out` unless it is NULL. */
static bool read_string(reader *r, text *out) {
    if (r->at >= r->end || *r->at != '"')
        return false;
    r->at++;
    while (r->at < r->end) {
        unsigned char c = (unsigned char)*r->at;
        const char *run = r->at;
        if (c == '"') {
            r->at++;
            if (out != NULL)
                append(out, "", 0); /* an empty string still gets its terminator */
            return true;
        }
        if (c < 0x20)
            return false;
        if (c != '\\') {
            while (r->at < r->end && *r->at != '"' && *r->at != '\\' && (unsigned char)*r->at >= 0x20)
                r->at++;
            if (out != NULL)
                append(out, run, (size_t)(r->at - run));
            continue;
        }
        r->at++;
        if (r->at >= r->end)
            return false;
        char e = *r->at++;
        const char *plain = strchr("\"\\/bfnrt", e);
        if (plain != NULL && e != '\0') {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            if (out != NULL)
                append(out, &decoded[plain - "\"\\/bfnrt"], 1);
            continue;
        }
        unsigned long point, low;
        if (e != 'u' || !hex4(r, &point))
            return false;
        /* A high surrogate followed by an escaped low one is one character; any other stays alone. */
        if (point >= 0xd800 && point <= 0xdbff && r->end - r->at >= 6 && r->at[0] == '\\' && r->at[1] == 'u') {
            reader ahead = {r->at + 2, r->end, r->depth};
            if (hex4(&ahead, &low) && low >= 0xdc00 && low <= 0xdfff) {
                point = 0x10000 + ((point - 0xd800) << 10) + (low - 0xdc00);
                r->at = ahead.at;
            }
        }
        if (out != NULL)
            append_code_point(out, point);
    }
    return false;
}

static bool read_digits(reader *r) {
    const char *start = r->at;
    while (r->at < r->end && *r->at >= '0' && *r->at <= '9')
        r->at++;
    return r->at > start;
}

static bool read_number(reader *r) {
    if (r->at < r->end && *r->at == '-')
        r->at++;
    if (r->at < r->end && *r->at == '0')
        r->at++;
    else if (!read_digits(r))
        return false;
    if (r->at < r->end && *r->at == '.') {
        r->at++;
        if (!read_digits(r))
            return false;
    }
    if (r->at < r->end && (*r->at == 'e' || *r->at == 'E')) {
        r->at++;
        if (r->at < r->end && (*r->at == '+' || *r->at == '-'))
            r->at++;
        if (!read_digits(r))
            return false;
    }
    return true;
}

static bool read_word(reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->at) < n || memcmp(r->at, word, n) != 0)
        return false;
    r->at += n;
    return true;
}

static bool skip_value(reader *r);

/* The members of an object or the items of an array (the opening bracket already read). */
static bool skip_items(reader *r, char close, bool members) {
    if (++r->depth > MAX_DEPTH)
        return false;
    skip_space(r);
    if (r->at < r->end && *r->at == close) {
        r->at++;
        r->depth--;
        return true;
    }
    for (;;) {
        if (members) {
            if (!read_string(r, NULL))
                return false;
            skip_space(r);
            if (r->at >= r->end || *r->at++ != ':')
                return false;
        }
        if (!skip_value(r))
            return false;
        skip_space(r);
        if (r->at >= r->end)
            return false;
        char c = *r->at++;
        if (c == close) {
            r->depth--;
            return true;
        }
        if (c != ',')
            return false;
        skip_space(r);
    }
}

/* Any JSON value, with the space around it. */
static bool skip_value(reader *r) {
    skip_space(r);
    if (r->at >= r->end)
        return false;
    bool ok;
    switch (*r->at) {
    case '{':
        r->at++;
        ok = skip_items(r, '}', true);
        break;
    case '[':
        r->at++;
        ok = skip_items(r, ']', false);
        break;
    case '"':
        ok = read_string(r, NULL);
        break;
    case 't':
        ok = read_word(r, "true");
        break;
    case 'f':
        ok = read_word(r, "false");
        break;
    case 'n':
        ok = read_word(r, "null");
        break;
    default:
        ok = read_number(r);
    }
    skip_space(r);
    return ok;
}

/* What this shim reads of a request: a field's JSON type, and its value where it uses it. */
typedef enum { ABSENT, STRING, NUMBER, YES, NO, NONE, OTHER } kind;

typedef struct {
    kind id_kind, op_kind, subject_kind, literal_kind, lenient_kind;
    text id, op, subject;
    const char *id_start, *id_end; /* the id's JSON text, echoed when it is no string */
} request;

static kind kind_at(const reader *r) {
    switch (*r->at) {
    case '"':
        return STRING;
    case 't':
        return YES;
    case 'f':
        return NO;
    case 'n':
        return NONE;
    case '{':
    case '[':
        return OTHER;
    default:
        return NUMBER;
    }
}

/* Reads one request line into `q`; false if it is no JSON object. */
static bool read_request(const char *line, size_t length, request *q) {
    reader r = {line, line + length, 0};
    text key = {0};
    bool ok = false;
    skip_space(&r);
    if (r.at >= r.end || *r.at++ != '{')
        goto done;
    skip_space(&r);
    if (r.at < r.end && *r.at == '}') {
        r.at++;
        ok = true;
        goto tail;
    }
    for (;;) {
        key.length = 0;
        if (!read_string(&r, &key))
            goto done;
        skip_space(&r);
        if (r.at >= r.end || *r.at++ != ':')
            goto done;
        skip_space(&r);
        if (r.at >= r.end)
            goto done;
        kind k = kind_at(&r);
        const char *start = r.at;
        text *into = NULL;
        size_t name = strlen(key.bytes);
        if (name != key.length) { /* a key holding U+0000 is none of ours */
        } else if (strcmp(key.bytes, "id") == 0) {
            q->id_kind = k, q->id_start = start, into = &q->id;
        } else if (strcmp(key.bytes, "op") == 0) {
            q->op_kind = k, into = &q->op;
        } else if (strcmp(key.bytes, "subject") == 0) {
            q->subject_kind = k, into = &q->subject;
        } else if (strcmp(key.bytes, "literal") == 0) {
            q->literal_kind = k;
        } else if (strcmp(key.bytes, "lenient") == 0) {
            q->lenient_kind = k;
        }
        if (into != NULL && k == STRING) {
            into->length = 0;
            if (!read_string(&r, into))
                goto done;
            skip_space(&r);
        } else if (!skip_value(&r)) {
            goto done;
        }
        if (into == &q->id)
            q->id_end = r.at;
        if (r.at >= r.end)
            goto done;
        char c = *r.at++;
        if (c == '}')
            break;
        if (c != ',')
            goto done;
        skip_space(&r);
    }
    ok = true;
tail:
    skip_space(&r);
    ok = ok && r.at == r.end;
done:
    free(key.bytes);
    return ok;
}

/* Writes UTF-8 (with the decoder's lone surrogates) as an ASCII JSON string. */
static void write_string(FILE *out, const char *bytes, size_t length) {
    const unsigned char *s = (const unsigned char *)bytes;
    size_t i = 0;
    fputc('"', out);
    while (i < length) {
        unsigned long c;
        size_t n = utf8_at(s + i, length - i, &c, true);
        if (n == 0) { /* not produced by the decoder: shown as U+FFFD */
            c = 0xfffd;
            n = 1;
        }
        i += n;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", (int)c);
        else if (c >= 0x20 && c < 0x7f)
            fputc((int)c, out);
        else if (c < 0x10000)
            fprintf(out, "\\u%04lx", c);
        else
            fprintf(out, "\\u%04lx\\u%04lx", 0xd800 + ((c - 0x10000) >> 10), 0xdc00 + ((c - 0x10000) & 0x3ff));
    }
    fputc('"', out);
}

static void write_id(FILE *out, const request *q) {
    fputs("{\"id\":", out);
    if (q == NULL || q->id_kind == ABSENT || q->id_kind == OTHER)
        fputs("null", out);
    else if (q->id_kind == STRING)
        write_string(out, q->id.bytes, q->id.length);
    else
        fwrite(q->id_start, 1, (size_t)(q->id_end - q->id_start), out);
}

static void write_error(FILE *out, const request *q, const char *error, const char *detail) {
    write_id(out, q);
    fprintf(out, ",\"error\":\"%s\",\"detail\":", error);
    write_string(out, detail, strlen(detail));
    fputs("}\n", out);
}

static natsConnection *connection = NULL;

/* The connection to $NATS_URL, made on the first question; NULL with `why` set if there is none. */
static natsConnection *connected(const char **why) {
    natsOptions *options = NULL;
    natsStatus s;
    const char *url = getenv("NATS_URL");
    if (connection != NULL)
        return connection;
    if (url == NULL || *url == '\0') {
        *why = "no server: $NATS_URL is not set";
        return NULL;
    }
    s = natsOptions_Create(&options);
    if (s == NATS_OK)
        s = natsOptions_SetURL(options, url);
    /* A subject the server cannot parse makes it close the connection: reconnect without end. */
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(options, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(options, 10);
    if (s == NATS_OK)
        s = natsConnection_Connect(&connection, options);
    natsOptions_Destroy(options);
    if (s != NATS_OK) {
        connection = NULL;
        *why = natsStatus_GetText(s);
    }
    return connection;
}

/* The status of the call that answers the rule: NATS_INVALID_SUBJECT for a subject it refuses. */
static natsStatus ask(natsConnection *nc, const char *subject, bool literal) {
    natsSubscription *subscription = NULL;
    natsStatus s;
    if (literal)
        return natsConnection_Publish(nc, subject, NULL, 0);
    s = natsConnection_SubscribeSync(&subscription, nc, subject);
    if (s == NATS_OK) {
        s = natsSubscription_Unsubscribe(subscription);
        natsSubscription_Destroy(subscription);
    }
    return s;
}

static void answer(FILE *out, const char *line, size_t length) {
    request q = {0};
    if (!read_request(line, length, &q)) {
        write_error(out, NULL, "bad-request", "line is not a JSON object");
    } else if (q.id_kind == OTHER) {
        write_error(out, NULL, "bad-request", "field 'id' must be a string, number or null");
    } else if (q.op_kind == STRING && strcmp(q.op.bytes, "hello") == 0 && strlen(q.op.bytes) == q.op.length) {
        write_id(out, &q);
        fputs(",\"protocol\":2,\"implementation\":", out);
        char implementation[64];
        snprintf(implementation, sizeof implementation, "libnats %s", nats_GetVersion());
        write_string(out, implementation, strlen(implementation));
        fputs(",\"server_version\":null,\"ops\":[\"hello\",\"valid_subject\"],"
              "\"subject_rules\":[\"subscribe\",\"publish\",\"subscribe-lenient\",\"publish-lenient\"],"
              "\"answered_by\":{\"subscribe\":\"" SUBSCRIBE "\",\"publish\":\"" PUBLISH "\","
              "\"subscribe-lenient\":\"" SUBSCRIBE "\",\"publish-lenient\":\"" PUBLISH "\"}}\n",
              out);
    } else if (q.op_kind != STRING || strcmp(q.op.bytes, "valid_subject") != 0 || strlen(q.op.bytes) != q.op.length) {
        write_error(out, &q, "bad-request", "unknown op; known: hello, valid_subject");
    } else if (q.subject_kind != STRING) {
        write_error(out, &q, "bad-request", "field 'subject' must be a string");
    } else if ((q.literal_kind != ABSENT && q.literal_kind != YES && q.literal_kind != NO) ||
               (q.lenient_kind != ABSENT && q.lenient_kind != YES && q.lenient_kind != NO)) {
        write_error(out, &q, "bad-request", "fields 'literal' and 'lenient' must be booleans");
    } else {
        const char *why = NULL;
        natsConnection *nc = connected(&why);
        natsStatus s = nc == NULL ? NATS_ERR : ask(nc, q.subject.bytes, q.literal_kind == YES);
        if (nc == NULL) {
            write_error(out, &q, "internal-error", why);
        } else if (s == NATS_OK || s == NATS_INVALID_SUBJECT) {
            write_id(out, &q);
            fprintf(out, ",\"valid\":%s}\n", s == NATS_OK ? "true" : "false");
        } else {
            write_error(out, &q, "internal-error", natsStatus_GetText(s));
        }
    }
    fflush(out);
    free(q.id.bytes);
    free(q.op.bytes);
    free(q.subject.bytes);
}

static bool blank(const char *line, size_t length) {
    for (size_t i = 0; i < length; i++)
        if (strchr(" \t\n\r\v\f", line[i]) == NULL || line[i] == '\0')
            return false;
    return true;
}

static bool is_utf8(const char *line, size_t length) {
    unsigned long c;
    for (size_t i = 0, n; i < length; i += n)
        if ((n = utf8_at((const unsigned char *)line + i, length - i, &c, false)) == 0)
            return false;
    return true;
}

int main(void) {
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &capacity, stdin)) != -1) {
        size_t content = (size_t)length - (line[length - 1] == '\n');
        if (content > MAX_LINE)
            write_error(stdout, NULL, "bad-request", "line longer than 1048576 bytes");
        else if (blank(line, (size_t)length))
            continue;
        else if (!is_utf8(line, (size_t)length))
            write_error(stdout, NULL, "bad-request", "line is not valid UTF-8");
        else
            answer(stdout, line, (size_t)length);
        fflush(stdout);
    }
    free(line);
    if (connection != NULL) {
        natsConnection_Destroy(connection);
        nats_Close();
    }
    return 0;
}
