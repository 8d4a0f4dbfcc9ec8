//go:build nats_v29 && !nats_v210

package main

import "github.com/nats-io/nats-server/v2/server"

func newEngine(source, destination string) (transformer, error) {
	return server.NewSubjectTransformer(source, destination)
}

var errorKinds = []errorKind{
	{server.ErrBadSubject, "invalid-source"},
	{server.ErrUnknownMappingDestinationFunction, "unknown-function"},
	{server.ErrorMappingDestinationFunctionWildcardIndexOutOfRange, "wildcard-index-out-of-range"},
	{server.ErrorMappingDestinationFunctionNotEnoughArguments, "wrong-argument-count"},
	{server.ErrorMappingDestinationFunctionTooManyArguments, "wrong-argument-count"},
	{server.ErrorMappingDestinationFunctionInvalidArgument, "invalid-argument"},
	{server.ErrMappingDestinationNotUsingAllWildcards, "wildcards-not-used"},
	{server.ErrInvalidMappingDestination, "invalid-destination"},
}
