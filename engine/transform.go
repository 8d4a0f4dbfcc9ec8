package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// transformer is a compiled mapping of the release: the subject mapped, or why not (the method of
// server.SubjectTransformer from 2.9, of the unexported transform before).
type transformer interface {
	Match(subject string) (string, error)
}

// errorKind names the protocol's kind for one of the release's mapping errors. The server wraps some of
// them in a type whose Is method knows only ErrInvalidMappingDestination, so the text is compared too;
// the table lists the specific errors before that general one.
type errorKind struct {
	err  error
	kind string
}

func init() {
	operations["transform"] = transform
	if hasPartition {
		operations["partition"] = partition
	}
}

type compileKey struct {
	source, destination string
	engineOnly          bool
}

// compiled keeps each mapping's transform (or its refusal) however many subjects are asked about.
var compiled = map[compileKey]compileResult{}

type compileResult struct {
	engine transformer
	err    error
}

func transform(r request) ([]field, error) {
	if err := checkVersion(r); err != nil {
		return nil, err
	}
	source, err := text(r, "source")
	if err != nil {
		return nil, err
	}
	destination, err := text(r, "destination")
	if err != nil {
		return nil, err
	}
	subject, err := text(r, "subject")
	if err != nil {
		return nil, err
	}
	engineOnly, err := flag(r, "engine_only")
	if err != nil {
		return nil, err
	}
	key := compileKey{source, destination, engineOnly}
	found := compile(key)
	if found.err != nil {
		return nil, compileRefusal(key, found.err)
	}
	mapped, err := found.engine.Match(subject)
	if errors.Is(err, server.ErrNoTransforms) || errors.Is(err, server.ErrBadSubject) {
		return nil, &failure{"subject-mismatch", err.Error()}
	}
	if err != nil {
		return nil, refusal(err)
	}
	return []field{{"subject", mapped}}, nil
}

// compile builds the release's transform; in account mode (not engine_only) the mapping must first be
// accepted by Account.AddMapping of a new account, the validation of a `mappings {}` entry.
func compile(key compileKey) compileResult {
	if found, ok := compiled[key]; ok {
		return found
	}
	var result compileResult
	if !key.engineOnly {
		result.err = server.NewAccount("engine").AddMapping(key.source, key.destination)
	}
	if result.err == nil {
		result.engine, result.err = newEngine(key.source, key.destination)
	}
	if len(compiled) >= 4096 {
		clear(compiled)
	}
	compiled[key] = result
	return result
}

func refusal(err error) error {
	for _, known := range errorKinds {
		if errors.Is(err, known.err) || strings.HasPrefix(err.Error(), known.err.Error()) {
			return &failure{known.kind, err.Error()}
		}
	}
	return &failure{"internal-error", "unclassified error: " + err.Error()}
}

// partition hashes the tokens with the release's {{partition(n,1)}} on a one-token subject: the hash is
// FNV-1a of the selected tokens concatenated, so one token holding the concatenation gives the same.
func partition(r request) ([]field, error) {
	keys, err := strs(r, "tokens")
	if err != nil {
		return nil, err
	}
	n, err := integer(r, "n")
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, badRequest("field 'n' must be >= 1 (got %d)", n)
	}
	key := strings.Join(keys, "")
	if key == "" || strings.ContainsAny(key, ". \t\r\n") || key == "*" || key == ">" {
		return nil, badRequest("tokens joined as %q are not one subject token the engine can hash", key)
	}
	found := compile(compileKey{"*", fmt.Sprintf("{{partition(%d,1)}}", n), true})
	if found.err != nil {
		return nil, refusal(found.err)
	}
	mapped, err := found.engine.Match(key)
	if err != nil {
		return nil, refusal(err)
	}
	var bucket int64
	if _, err := fmt.Sscan(mapped, &bucket); err != nil {
		return nil, &failure{"internal-error", "partition answered " + mapped}
	}
	return []field{{"partition", bucket}}, nil
}
