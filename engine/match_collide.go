//go:build !nats_v211

package main

import "github.com/nats-io/nats-server/v2/server"

// matches asks SubjectsCollide, the only exported matcher before 2.11; for a literal subject it is the
// server's subset match (isSubsetMatch) of the subject against the pattern.
func matches(pattern, subject string) bool { return server.SubjectsCollide(pattern, subject) }
