// Command nats-jwt-adapter answers the nats-conformance adapter protocol (docs/adapter-protocol.md,
// version 2) with github.com/nats-io/jwt/v2, the library nsc and account servers build account JWTs
// with. Every answer comes from one of the library's exported functions; this file only reads
// requests and writes answers:
//
//   - valid_subject (the subscribe rule only): Subject.Validate
//   - contains: Subject.IsContainedIn
//   - valid_mapping: a Mapping decoded from the account JWT's JSON form, then Mapping.Validate
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"unicode/utf16"

	"github.com/nats-io/jwt/v2"
)

const module = "github.com/nats-io/jwt/v2"

type entry struct {
	Destination string  `json:"destination"`
	Weight      any     `json:"weight"`
	Cluster     *string `json:"cluster"`
}

type request struct {
	ID           any     `json:"id"`
	Op           string  `json:"op"`
	Subject      *string `json:"subject"`
	Literal      bool    `json:"literal"`
	Filter       *string `json:"filter"`
	Within       *string `json:"within"`
	Source       *string `json:"source"`
	Destinations []entry `json:"destinations"`
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func failed(id any, kind, detail string) map[string]any {
	return map[string]any{"id": id, "error": kind, "detail": detail}
}

func valid(vr *jwt.ValidationResults) bool {
	return len(vr.Errors()) == 0
}

// mapping is the weighted list as an account JWT states it ({"subject", "weight", "cluster"} per
// destination), decoded by the library's own types; a weight a JWT cannot hold fails to decode.
func mapping(source string, entries []entry) (jwt.Mapping, error) {
	listed := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		item := map[string]any{"subject": e.Destination, "weight": e.Weight}
		if e.Cluster != nil {
			item["cluster"] = *e.Cluster
		}
		listed = append(listed, item)
	}
	text, err := json.Marshal(map[string]any{source: listed})
	if err != nil {
		return nil, err
	}
	var decoded jwt.Mapping
	err = json.Unmarshal(text, &decoded)
	return decoded, err
}

func answer(line []byte) map[string]any {
	var r request
	if err := json.Unmarshal(line, &r); err != nil {
		return failed(nil, "bad-request", err.Error())
	}
	missing := func(name string) map[string]any { return failed(r.ID, "bad-request", "missing field '"+name+"'") }
	switch r.Op {
	case "hello":
		return map[string]any{
			"id": r.ID, "protocol": 2, "implementation": "nats-io/jwt " + version(),
			"server_version": nil,
			"ops":            []string{"hello", "valid_subject", "contains", "valid_mapping"},
			"subject_rules":  []string{"subscribe"},
			"answered_by": map[string]string{
				"valid_subject": "Subject.Validate", "contains": "Subject.IsContainedIn",
				"valid_mapping": "Mapping.Validate",
			},
		}
	case "valid_subject":
		if r.Subject == nil {
			return missing("subject")
		}
		if r.Literal {
			return failed(r.ID, "bad-request", "jwt has no rule for publish subjects")
		}
		vr := jwt.CreateValidationResults()
		jwt.Subject(*r.Subject).Validate(vr)
		return map[string]any{"id": r.ID, "valid": valid(vr)}
	case "contains":
		if r.Filter == nil || r.Within == nil {
			return missing("filter")
		}
		return map[string]any{"id": r.ID, "contained": jwt.Subject(*r.Filter).IsContainedIn(jwt.Subject(*r.Within))}
	case "valid_mapping":
		if r.Source == nil {
			return missing("source")
		}
		decoded, err := mapping(*r.Source, r.Destinations)
		if err != nil {
			return map[string]any{"id": r.ID, "valid": false}
		}
		vr := jwt.CreateValidationResults()
		decoded.Validate(vr)
		return map[string]any{"id": r.ID, "valid": valid(vr)}
	}
	return failed(r.ID, "bad-request", fmt.Sprintf("unknown op %q", r.Op))
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	var buffer bytes.Buffer
	encoder := json.NewEncoder(&buffer)
	encoder.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 && len(bytesTrim(line)) > 0 {
			buffer.Reset()
			_ = encoder.Encode(answer(line))
			_, _ = out.Write(ascii(buffer.Bytes()))
			_ = out.Flush()
		}
		if err != nil {
			return
		}
	}
}

// ascii escapes every non-ASCII character of encoded JSON as \uXXXX (a pair of them past U+FFFF), as
// the protocol's answers are ASCII-only; outside strings JSON has none.
func ascii(encoded []byte) []byte {
	escaped := make([]byte, 0, len(encoded))
	for _, r := range string(encoded) {
		switch {
		case r < 0x80:
			escaped = append(escaped, byte(r))
		case r > 0xFFFF:
			high, low := utf16.EncodeRune(r)
			escaped = fmt.Appendf(escaped, "\\u%04x\\u%04x", high, low)
		default:
			escaped = fmt.Appendf(escaped, "\\u%04x", r)
		}
	}
	return escaped
}

func bytesTrim(line []byte) []byte {
	start, end := 0, len(line)
	for start < end && (line[start] == ' ' || line[start] == '\t' || line[start] == '\r' || line[start] == '\n') {
		start++
	}
	for end > start && (line[end-1] == ' ' || line[end-1] == '\t' || line[end-1] == '\r' || line[end-1] == '\n') {
		end--
	}
	return line[start:end]
}
