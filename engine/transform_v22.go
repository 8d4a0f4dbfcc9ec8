//go:build !nats_v28

package main

import (
	_ "unsafe" // for go:linkname

	"github.com/nats-io/nats-server/v2/server"
)

// 2.2 to 2.7 have only $n placeholders and no partition function; every refusal is ErrBadSubject
// (https://github.com/nats-io/nats-server/blob/v2.2.6/server/accounts.go, newTransform).
const hasPartition = false

var errorKinds = []errorKind{
	{server.ErrBadSubject, "invalid-destination"},
}

//go:linkname placeHolderIndex github.com/nats-io/nats-server/v2/server.placeHolderIndex
func placeHolderIndex(token string) int

// placeholderRefusal follows newTransform's loop: a $n beyond the source's `*` count, then the count
// of $n tokens, which must equal the number of `*`.
func placeholderRefusal(tokens []string, partials int) string {
	placeholders := 0
	for _, token := range tokens {
		if index := placeHolderIndex(token); index >= 0 {
			if index > partials {
				return "wildcard-index-out-of-range"
			}
			placeholders++
		}
	}
	if placeholders != partials {
		return "wildcards-not-used"
	}
	return ""
}
