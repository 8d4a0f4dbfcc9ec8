//go:build nats_v211

package main

import "github.com/nats-io/nats-server/v2/server"

// matches asks SubjectMatchesFilter (exported from 2.11 on).
func matches(pattern, subject string) bool { return server.SubjectMatchesFilter(subject, pattern) }
