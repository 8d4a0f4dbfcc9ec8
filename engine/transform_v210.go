//go:build nats_v210

package main

import "github.com/nats-io/nats-server/v2/server"

func newEngine(source, destination string) (transformer, error) {
	return server.NewSubjectTransform(source, destination)
}

var errorKinds = []errorKind{
	{server.ErrBadSubject, "invalid-source"},
	{server.ErrUnknownMappingDestinationFunction, "unknown-function"},
	{server.ErrMappingDestinationIndexOutOfRange, "wildcard-index-out-of-range"},
	{server.ErrMappingDestinationNotEnoughArgs, "wrong-argument-count"},
	{server.ErrMappingDestinationTooManyArgs, "wrong-argument-count"},
	{server.ErrMappingDestinationInvalidArg, "invalid-argument"},
	{server.ErrMappingDestinationNotUsingAllWildcards, "wildcards-not-used"},
	{server.ErrInvalidMappingDestination, "invalid-destination"},
}
