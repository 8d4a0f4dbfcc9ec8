//go:build nats_v28 && !nats_v29

package main

import (
	_ "unsafe" // for go:linkname

	"github.com/nats-io/nats-server/v2/server"
)

// 2.8 adds {{wildcard(i)}} and {{partition(n,i...)}}, and ErrBadSubjectMappingDestination for the
// placeholder checks (https://github.com/nats-io/nats-server/blob/v2.8.4/server/accounts.go).
const hasPartition = true

var errorKinds = []errorKind{
	{server.ErrBadSubjectMappingDestination, "invalid-destination"},
	{server.ErrBadSubject, "invalid-destination"},
}

//go:linkname placeHolderIndex github.com/nats-io/nats-server/v2/server.placeHolderIndex
func placeHolderIndex(token string) ([]int, int32, error)

// placeholderRefusal follows newTransform's loop: an argument that is not an integer, an index
// beyond the source's `*` count, then fewer placeholder tokens than `*`.
func placeholderRefusal(tokens []string, partials int) string {
	placeholders := 0
	for _, token := range tokens {
		indexes, _, err := placeHolderIndex(token)
		if err != nil {
			return "invalid-argument"
		}
		if indexes[0] >= 0 {
			placeholders++
			for _, index := range indexes {
				if index > partials {
					return "wildcard-index-out-of-range"
				}
			}
		}
	}
	if placeholders < partials {
		return "wildcards-not-used"
	}
	return ""
}
