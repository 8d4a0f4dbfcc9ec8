//go:build !nats_v29

package main

import (
	"unsafe"

	"github.com/nats-io/nats-server/v2/server"
)

// Before 2.9 the transform engine is unexported: newTransform(src, dest) (*transform, error) and the
// method (*transform).match(subject) (string, error) in server/accounts.go, with the same signatures
// from v2.2.0 to v2.8.4 (https://github.com/nats-io/nats-server/blob/v2.8.4/server/accounts.go). They
// are reached with pull linknames; the *transform is only passed back, so it is held as an opaque
// pointer. subjectInfo (https://github.com/nats-io/nats-server/blob/v2.8.4/server/sublist.go) is the
// constructor's own first check, used to name refusals.

//go:linkname newTransform github.com/nats-io/nats-server/v2/server.newTransform
func newTransform(source, destination string) (unsafe.Pointer, error)

//go:linkname transformMatch github.com/nats-io/nats-server/v2/server.(*transform).match
func transformMatch(tr unsafe.Pointer, subject string) (string, error)

//go:linkname subjectInfo github.com/nats-io/nats-server/v2/server.subjectInfo
func subjectInfo(subject string) (valid bool, tokens []string, partials int, full bool)

type unexportedTransform struct{ tr unsafe.Pointer }

func (t unexportedTransform) Match(subject string) (string, error) {
	return transformMatch(t.tr, subject)
}

func newEngine(source, destination string) (transformer, error) {
	tr, err := newTransform(source, destination)
	if err != nil {
		return nil, err
	}
	return unexportedTransform{tr}, nil
}

// compileRefusal names why a mapping was refused. These releases have one or two error values for
// every refusal (ErrBadSubject; 2.8 adds ErrBadSubjectMappingDestination, same text whatever the
// cause), so the checks that can refuse are asked again in the order the server makes them:
// Account.AddWeightedMappings first checks both subjects with IsValidSubject (account mode), then
// newTransform checks both with subjectInfo, then reads the destination's placeholders
// (placeholderRefusal, per release range).
func compileRefusal(key compileKey, err error) error {
	detail := err.Error()
	if !key.engineOnly {
		if !server.IsValidSubject(key.source) {
			return &failure{"invalid-source", detail}
		}
		if !server.IsValidSubject(key.destination) {
			return &failure{"invalid-destination", detail}
		}
	}
	sourceValid, _, partials, full := subjectInfo(key.source)
	if !sourceValid {
		return &failure{"invalid-source", detail}
	}
	destinationValid, tokens, destinationPartials, destinationFull := subjectInfo(key.destination)
	if !destinationValid || destinationPartials > 0 || full != destinationFull {
		return &failure{"invalid-destination", detail}
	}
	if kind := placeholderRefusal(tokens, partials); kind != "" {
		return &failure{kind, detail}
	}
	return &failure{"internal-error", "unclassified error: " + detail}
}
