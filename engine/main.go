// Command nats-conformance-engine answers the nats-conformance adapter protocol (docs/adapter-protocol.md
// in github.com/nats-io's spirit: JSON lines in, one JSON line out per request) with the subject code of
// the nats-server release it is built against (github.com/nats-io/nats-server, package server). From
// 2.9 only that release's exported API is used; before, the unexported transform is reached by
// linkname (transform_linkname.go). Files with build tags pick the API of each range of releases.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats-server/v2/server"
)

const maxLine = 1 << 20

// release is the nats-server release this program is built against (-ldflags "-X main.release=...").
var release = "unknown"

type request map[string]any

// field is one answer field; answers keep their field order.
type field struct {
	name  string
	value any
}

// failure is an error answer of the protocol: a stable kind and a one-line detail.
type failure struct{ kind, detail string }

func (f *failure) Error() string { return f.kind + ": " + f.detail }

func badRequest(format string, args ...any) *failure {
	return &failure{"bad-request", fmt.Sprintf(format, args...)}
}

type operation func(request) ([]field, error)

var operations = map[string]operation{
	"match":         match,
	"valid_subject": validSubject,
}

func init() { operations["hello"] = hello }

func hello(request) ([]field, error) {
	names := make([]string, 0, len(operations))
	for name := range operations {
		names = append(names, name)
	}
	sort.Strings(names)
	return []field{
		{"protocol", 1},
		{"implementation", "nats-server engine " + release},
		{"server_version", release},
		{"ops", names},
	}, nil
}

func match(r request) ([]field, error) {
	pattern, err := text(r, "pattern")
	if err != nil {
		return nil, err
	}
	subject, err := text(r, "subject")
	if err != nil {
		return nil, err
	}
	return []field{{"match", matches(pattern, subject)}}, nil
}

func validSubject(r request) ([]field, error) {
	subject, err := text(r, "subject")
	if err != nil {
		return nil, err
	}
	literal, err := flag(r, "literal")
	if err != nil {
		return nil, err
	}
	if literal {
		return []field{{"valid", server.IsValidPublishSubject(subject)}}, nil
	}
	return []field{{"valid", server.IsValidSubject(subject)}}, nil
}

func present(r request, name string) bool {
	value, ok := r[name]
	return ok && value != nil
}

func text(r request, name string) (string, error) {
	if !present(r, name) {
		return "", badRequest("missing field %q", name)
	}
	value, ok := r[name].(string)
	if !ok {
		return "", badRequest("field %q must be a str", name)
	}
	return value, nil
}

func flag(r request, name string) (bool, error) {
	if !present(r, name) {
		return false, nil
	}
	value, ok := r[name].(bool)
	if !ok {
		return false, badRequest("field %q must be a bool", name)
	}
	return value, nil
}

func integer(r request, name string) (int64, error) {
	if !present(r, name) {
		return 0, badRequest("missing field %q", name)
	}
	number, ok := r[name].(json.Number)
	if !ok {
		return 0, badRequest("field %q must be an int", name)
	}
	value, err := number.Int64()
	if err != nil {
		return 0, badRequest("field %q must be an int", name)
	}
	return value, nil
}

func strs(r request, name string) ([]string, error) {
	if !present(r, name) {
		return nil, badRequest("missing field %q", name)
	}
	items, ok := r[name].([]any)
	if !ok {
		return nil, badRequest("field %q must be a list", name)
	}
	values := make([]string, len(items))
	for i, item := range items {
		if values[i], ok = item.(string); !ok {
			return nil, badRequest("field %q must be a list of strings", name)
		}
	}
	return values, nil
}

// checkVersion refuses a server_version other than this release (or its line).
func checkVersion(r request) error {
	if !present(r, "server_version") {
		return nil
	}
	spec, err := text(r, "server_version")
	if err != nil {
		return err
	}
	spec = strings.TrimPrefix(spec, "v")
	if spec == release || strings.HasPrefix(release, spec+".") && strings.Count(spec, ".") == 1 {
		return nil
	}
	return &failure{"unknown-version", "this engine is nats-server " + release + ", not " + spec}
}

func answer(line []byte) []field {
	if !utf8.Valid(line) {
		return errorAnswer(nil, badRequest("line is not valid UTF-8"))
	}
	decoder := json.NewDecoder(bytes.NewReader(line))
	decoder.UseNumber()
	var decoded any
	if err := decoder.Decode(&decoded); err != nil {
		return errorAnswer(nil, badRequest("line is not JSON: %v", err))
	}
	if _, err := decoder.Token(); err != io.EOF {
		return errorAnswer(nil, badRequest("line is not JSON: extra data"))
	}
	r, ok := decoded.(map[string]any)
	if !ok {
		return errorAnswer(nil, badRequest("request must be a JSON object"))
	}
	id := r["id"]
	switch id.(type) {
	case map[string]any, []any:
		return errorAnswer(nil, badRequest("field 'id' must be a string, number or null"))
	}
	name, _ := r["op"].(string)
	op, known := operations[name]
	if !known {
		return errorAnswer(id, badRequest("unknown op %v", r["op"]))
	}
	fields, err := safely(op, r)
	if err != nil {
		return errorAnswer(id, err)
	}
	return append([]field{{"id", id}}, fields...)
}

// safely runs one operation; a panic of the server code is an internal-error answer, never fatal.
func safely(op operation, r request) (fields []field, err error) {
	defer func() {
		if caught := recover(); caught != nil {
			fields, err = nil, &failure{"internal-error", fmt.Sprintf("panic: %v", caught)}
		}
	}()
	return op(r)
}

func errorAnswer(id any, err error) []field {
	f, ok := err.(*failure)
	if !ok {
		f = &failure{"internal-error", err.Error()}
	}
	return []field{{"id", id}, {"error", f.kind}, {"detail", strings.ReplaceAll(f.detail, "\n", " ")}}
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	for {
		line, tooLong, err := readLine(in)
		if len(line) == 0 && !tooLong && err != nil {
			break
		}
		if tooLong {
			encode(out, errorAnswer(nil, badRequest("line longer than %d bytes", maxLine)))
		} else if len(bytes.TrimSpace(line)) > 0 {
			encode(out, answer(line))
		}
		if in.Buffered() == 0 { // answers reach the client before it has to wait for them
			if out.Flush() != nil {
				return
			}
		}
		if err != nil {
			break
		}
	}
	_ = out.Flush()
}

// readLine reads one line (without its newline); a line over maxLine bytes is skipped and reported.
func readLine(in *bufio.Reader) ([]byte, bool, error) {
	var line []byte
	for {
		chunk, err := in.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine+1 {
			line = append(line, chunk...)
		} else {
			line = line[:maxLine+1]
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		tooLong := len(bytes.TrimSuffix(line, []byte("\n"))) > maxLine
		if tooLong {
			return nil, true, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), false, err
	}
}
