//go:build nats_v29

package main

import (
	"errors"

	"github.com/nats-io/nats-server/v2/server"
)

// From 2.9 the transform has {{partition(n,i...)}} and the constructor is exported.
const hasPartition = true

// compileRefusal names why a mapping was refused. The constructor's one error for a destination with
// `*`, or `>` in only one of the two, is ErrBadSubject with a valid source.
func compileRefusal(key compileKey, err error) error {
	if errors.Is(err, server.ErrBadSubject) && server.IsValidSubject(key.source) {
		return &failure{"invalid-destination", err.Error()}
	}
	return refusal(err)
}
